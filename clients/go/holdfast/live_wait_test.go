package holdfast

// Waiting in line (HoldRequest.wait_ms, issue 11) against the real daemon.
// These tests need a holdfastd that waits in line: until it does, a Hold
// WithWait answers ErrHeldByAnother at once and they fail.

import (
	"errors"
	"testing"
	"time"
)

func TestLiveWaitInLineIsGrantedWhenTheHolderReleases(t *testing.T) {
	a := liveClient(t)
	b := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)

	first, err := a.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"W1", "W2"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, err := first.Release(ctxT(t, 5*time.Second))
		released <- err
	}()
	start := time.Now()
	second, err := b.Hold(ctxT(t, 10*time.Second), ns, part, Seats{"W2"}, 0, WithSession(), WithWait(3*time.Second))
	waited := time.Since(start)
	if err != nil {
		t.Fatalf("hold WithWait(3s) after %s: %v", waited, err)
	}
	defer second.Close()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	t.Logf("granted after %s in line", waited)
	if waited < 150*time.Millisecond || waited > 2500*time.Millisecond {
		t.Fatalf("granted after %s: want it soon after the release (~200 ms)", waited)
	}
	if second.Fence <= first.Fence {
		t.Fatalf("fence %d after %d", second.Fence, first.Fence)
	}
}

func TestLiveWaitThatRunsOutIsHeldByAnother(t *testing.T) {
	a := liveClient(t)
	b := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)

	h, err := a.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"W3"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	start := time.Now()
	_, err = b.Hold(ctxT(t, 10*time.Second), ns, part, Seats{"W3"}, time.Minute, WithWait(600*time.Millisecond))
	waited := time.Since(start)
	if !errors.Is(err, ErrHeldByAnother) || ResourceOf(err) != "W3" {
		t.Fatalf("after %s: want ErrHeldByAnother naming W3, got %v", waited, err)
	}
	t.Logf("answered after %s", waited)
	if waited < 500*time.Millisecond || waited > 3*time.Second {
		t.Fatalf("answered after %s: want after the 600 ms wait ran out", waited)
	}
	// Nothing changed hands.
	st, err := h.Status(ctxT(t, 5*time.Second))
	if err != nil || len(st.Resources) != 1 || !st.Resources[0].Owned {
		t.Fatalf("the first hold after the wait: %+v %v", st, err)
	}
}
