package holdfast

// Session holds (docs/sessions.md) against the real daemon. The test stack's
// seat namespace has the default session TTL, 5 s (renewed every 1.67 s).
// The tests that sleep through renewals run in parallel with each other.

import (
	"errors"
	"testing"
	"time"
)

// sessionTTL is the session TTL of the test stack's namespaces
// (session_ttl_ms unset: the default).
const sessionTTL = 5 * time.Second

func seatStatusOf(t *testing.T, c *Client, part, id string) ResourceStatus {
	t.Helper()
	st, err := c.Status(ctxT(t, 5*time.Second), testNamespace(), part, Seats{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 1 {
		t.Fatalf("status: %v", st)
	}
	return st.Resources[0]
}

func TestLiveSessionHoldRenewedWhileIdle(t *testing.T) {
	t.Parallel()
	c := liveClient(t)
	other := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)

	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"S1", "S2"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !h.Session || h.TTL != sessionTTL {
		t.Fatalf("session hold: %v (want the session TTL %s)", h, sessionTTL)
	}
	// Idle past three session TTLs: nobody extends it, the client sends
	// nothing; the daemon renews it.
	time.Sleep(3*sessionTTL + time.Second)
	if err := h.Lost(); err != nil {
		t.Fatalf("lost while idle: %v", err)
	}
	st, err := h.Status(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Resources {
		if r.State != StateHeld || !r.Owned || r.TTL <= 0 || r.TTL > sessionTTL {
			t.Fatalf("after %s idle: %+v", 3*sessionTTL, r)
		}
	}
	if _, err := other.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"S2"}, 0); !errors.Is(err, ErrHeldByAnother) {
		t.Fatalf("another client's hold on S2: want ErrHeldByAnother, got %v", err)
	}
	// Released through its own connection: gone at once, and never
	// reported lost afterwards.
	if n, err := h.Release(ctxT(t, 5*time.Second)); err != nil || n != 2 {
		t.Fatalf("release: %d %v", n, err)
	}
	if s := seatStatusOf(t, other, part, "S1"); s.State != StateFree {
		t.Fatalf("after release S1 is %v", s.State)
	}
	time.Sleep(sessionTTL / 2) // a renewal tick or more
	if err := h.Lost(); err != nil {
		t.Fatalf("a released session hold reported lost: %v", err)
	}
}

func TestLiveSessionHoldFreedWhenClientCloses(t *testing.T) {
	t.Parallel()
	socket := liveSocket(t)
	holder, err := Dial(ctxT(t, 5*time.Second), socket)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	watcher := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)

	h, err := holder.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"K1"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	if s := seatStatusOf(t, watcher, part, "K1"); s.State != StateHeld {
		t.Fatalf("before close K1 is %v", s.State)
	}
	closed := time.Now()
	holder.Close()
	// The daemon releases at once: a bystander sees the seat free within
	// milliseconds, not after the session TTL.
	var freeAfter time.Duration
	for {
		if s := seatStatusOf(t, watcher, part, "K1"); s.State == StateFree {
			freeAfter = time.Since(closed)
			break
		}
		if time.Since(closed) > sessionTTL/2 {
			t.Fatalf("K1 still held %s after the holder closed", time.Since(closed))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("K1 free %s after Close", freeAfter)
	if freeAfter > time.Second {
		t.Fatalf("K1 free only %s after Close", freeAfter)
	}
	if err := waitLost(t, h); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: Lost %v, want it to match ErrClosed", err)
	}
}

func TestLiveSessionHoldLostIsReported(t *testing.T) {
	t.Parallel()
	c := liveClient(t)
	other := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)

	reported := make(chan error, 1)
	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"L1", "L2"}, 0, WithSession(),
		WithOnLost(func(_ SessionHold, err error) { reported <- err }))
	if err != nil {
		t.Fatal(err)
	}
	// Another client releases the hold with its token: the session finds
	// the keys gone at its next renewal (within a third of the session TTL)
	// and reports the hold lost.
	released := time.Now()
	if n, err := other.Resume(ns, part, h.Target, h.Token()).Release(ctxT(t, 5*time.Second)); err != nil || n != 2 {
		t.Fatalf("release from another client: %d %v", n, err)
	}
	var lost error
	select {
	case lost = <-reported:
	case <-time.After(sessionTTL):
		t.Fatalf("not reported within %s", sessionTTL)
	}
	t.Logf("reported %s after the release: %v", time.Since(released), lost)
	if !errors.Is(lost, ErrNotHeld) || h.Lost() != lost {
		t.Fatalf("reported %v, Lost %v; want ErrNotHeld", lost, h.Lost())
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Done not closed")
	}
	// The next call that touches it says so too.
	if _, err := h.Extend(ctxT(t, 5*time.Second), 0); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend of a lost hold: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close of a lost hold: %v", err)
	}
	// The connection lives on.
	if _, err := c.Health(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestLiveSessionHoldRefusesATTL(t *testing.T) {
	c := liveClient(t)
	_, err := c.Hold(ctxT(t, 5*time.Second), testNamespace(), partitionFor(t), Seats{"T1"}, time.Minute, WithSession())
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("session hold with a TTL: want ErrInvalidArgument, got %v", err)
	}
}
