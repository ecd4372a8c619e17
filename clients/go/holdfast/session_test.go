package holdfast

// Session holds and waiting in line against the scripted peer of
// transport_test.go: what goes on the wire, and how unsolicited session
// events and the end of a connection reach the holds. Against the real
// daemon: live_sessions_test.go and live_wait_test.go.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

func grant(req *pb.Request, fence uint64) *pb.Response {
	return &pb.Response{Id: req.GetId(), CorrelationId: req.GetCorrelationId(), Code: CodeOK,
		Result: &pb.Response_Hold{Hold: &pb.HoldResponse{
			Token: fmt.Sprintf("%d.c2VjcmV0LXRva2Vu", fence), Fence: fence, TtlMs: 5000}}}
}

func sessionEvent(lost ...*pb.SessionHoldLost) *pb.Response {
	return &pb.Response{Code: CodeOK, Result: &pb.Response_SessionEvent{
		SessionEvent: &pb.SessionEvent{Lost: lost}}}
}

// sessionPeer grants every Hold with fence = 100 + its order, answers
// Health and Release, and records the requests.
type sessionPeer struct {
	*peer
	mu    sync.Mutex
	reqs  []*pb.Request
	nc    net.Conn
	fence uint64
	// before, when set, is sent just before the grant of a Hold.
	before func(req *pb.Request, fence uint64) *pb.Response
}

func newSessionPeer(t *testing.T) *sessionPeer {
	sp := &sessionPeer{fence: 100}
	sp.peer = newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		sp.mu.Lock()
		sp.reqs = append(sp.reqs, req)
		sp.nc = nc
		before := sp.before
		sp.mu.Unlock()
		switch {
		case req.GetHold() != nil:
			sp.mu.Lock()
			sp.fence++
			f := sp.fence
			sp.mu.Unlock()
			if before != nil {
				p.send(nc, before(req, f))
			}
			p.send(nc, grant(req, f))
		case req.GetRelease() != nil:
			p.send(nc, &pb.Response{Id: req.GetId(), Code: CodeOK,
				Result: &pb.Response_Release{Release: &pb.ReleaseResponse{Released: uint32(len(req.GetRelease().GetIds()))}}})
		default:
			p.send(nc, okHealth(req))
		}
	})
	return sp
}

func (sp *sessionPeer) conn() net.Conn {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.nc
}

func (sp *sessionPeer) last() *pb.Request {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.reqs[len(sp.reqs)-1]
}

func waitLost(t *testing.T, h SessionHold) error {
	t.Helper()
	select {
	case <-h.Done():
		return h.Lost()
	case <-time.After(5 * time.Second):
		t.Fatalf("%v: never reported lost", h)
		return nil
	}
}

func TestSessionHoldRequestFrame(t *testing.T) {
	sp := newSessionPeer(t)
	c := New(sp.path)
	defer c.Close()
	h, err := c.Hold(context.Background(), "seat", "p", Seats{"E7"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	hr := sp.last().GetHold()
	if !hr.GetSession() || hr.GetTtlMs() != 0 || hr.GetWaitMs() != 0 {
		t.Fatalf("hold request: %v", hr)
	}
	if !h.Session || h.Fence != 101 || h.Lost() != nil || h.Done() == nil {
		t.Fatalf("hold: %v lost=%v", h, h.Lost())
	}
	if !strings.Contains(h.String(), "session") || strings.Contains(h.String(), h.Token()) {
		t.Fatalf("String: %s", h.String())
	}
	plain, err := c.Hold(context.Background(), "seat", "p", Seats{"E8"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if sp.last().GetHold().GetSession() || plain.Session || plain.Done() != nil || plain.Lost() != nil {
		t.Fatalf("plain hold: %v", plain)
	}
}

func TestSessionEventMarksTheHoldLostAndTheConnectionLives(t *testing.T) {
	sp := newSessionPeer(t)
	c := New(sp.path)
	defer c.Close()
	called := make(chan error, 2)
	var calledWith SessionHold
	var mu sync.Mutex
	onLost := WithOnLost(func(h SessionHold, err error) {
		mu.Lock()
		calledWith = h
		mu.Unlock()
		called <- err
	})
	ctx := context.Background()
	a, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0, WithSession(), onLost)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Hold(ctx, "seat", "p", Seats{"E8"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	// Same fence in another partition, and another fence: not a's.
	sp.send(sp.conn(), sessionEvent(
		&pb.SessionHoldLost{Namespace: "seat", Partition: "other", Fence: a.Fence, Reason: CodeNotHeld},
		&pb.SessionHoldLost{Namespace: "seat", Partition: "p", Fence: 999, Reason: CodeNotHeld},
		&pb.SessionHoldLost{Namespace: "seat", Partition: "p", Ids: []string{"E7"}, Fence: a.Fence,
			Reason: CodeHeldByAnother, ResourceId: "E7", Message: "resource E7 is held by another token"}))
	err = waitLost(t, a)
	if !errors.Is(err, ErrHeldByAnother) || ResourceOf(err) != "E7" || !strings.Contains(err.Error(), "session hold lost") {
		t.Fatalf("a lost with %v", err)
	}
	select {
	case got := <-called:
		if got != err {
			t.Fatalf("OnLost got %v, Lost %v", got, err)
		}
		mu.Lock()
		if calledWith != a {
			t.Fatalf("OnLost got hold %v", calledWith)
		}
		mu.Unlock()
	case <-time.After(5 * time.Second):
		t.Fatal("OnLost never ran")
	}
	if b.Lost() != nil {
		t.Fatalf("b lost too: %v", b.Lost())
	}
	// The connection is still up: a session event is not fatal.
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("health after a session event: %v", err)
	}
	// A second report about a does not run OnLost again.
	sp.send(sp.conn(), sessionEvent(&pb.SessionHoldLost{Namespace: "seat", Partition: "p", Fence: a.Fence, Reason: CodeNotHeld}))
	if _, err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-called:
		t.Fatalf("OnLost ran twice: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if !errors.Is(a.Lost(), ErrHeldByAnother) {
		t.Fatalf("the first report must stay: %v", a.Lost())
	}
}

func TestSessionEventBeforeTheGrantIsKept(t *testing.T) {
	sp := newSessionPeer(t)
	sp.before = func(req *pb.Request, fence uint64) *pb.Response {
		h := req.GetHold()
		return sessionEvent(&pb.SessionHoldLost{Namespace: h.GetNamespace(), Partition: h.GetPartition(),
			Fence: fence, Reason: CodeConfirmed, ResourceId: "E7"})
	}
	c := New(sp.path)
	defer c.Close()
	h, err := c.Hold(context.Background(), "seat", "p", Seats{"E7"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	if err := waitLost(t, h); !errors.Is(err, ErrConfirmed) {
		t.Fatalf("want ErrConfirmed, got %v", err)
	}
}

func TestConnectionEndLosesSessionHolds(t *testing.T) {
	sp := newSessionPeer(t)
	c := New(sp.path)
	defer c.Close()
	ctx := context.Background()
	s, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	released, err := c.Hold(ctx, "seat", "p", Seats{"E9"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	plain, err := c.Hold(ctx, "seat", "p", Seats{"E8"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sp.dropConns()
	if err := waitLost(t, s); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
	if released.Lost() != nil || plain.Lost() != nil {
		t.Fatalf("released %v, plain %v: neither is a held session hold", released.Lost(), plain.Lost())
	}
	// The next call dials again; a session hold taken there is fine.
	again, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	if again.Lost() != nil {
		t.Fatalf("new hold lost: %v", again.Lost())
	}
}

func TestClientCloseLosesSessionHolds(t *testing.T) {
	sp := newSessionPeer(t)
	c := New(sp.path)
	h, err := c.Hold(context.Background(), "seat", "p", Seats{"E7"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := waitLost(t, h); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("want ErrUnavailable wrapping ErrClosed, got %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close after the client closed: %v", err)
	}
}

func TestOtherFrameWithIDZeroStaysFatal(t *testing.T) {
	// A session event with a code other than OK is not a session event.
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		r := sessionEvent()
		r.Code = CodeInternal
		r.Message = "not a session event"
		p.send(nc, r)
		_ = nc.Close()
	})
	c := New(p.path)
	defer c.Close()
	if _, err := c.Health(context.Background()); !IsUnavailable(err) || !strings.Contains(err.Error(), "not a session event") {
		t.Fatalf("want the connection failed, got %v", err)
	}
}

func TestWaitMs(t *testing.T) {
	for _, tc := range []struct {
		wait, left time.Duration
		want       uint32
	}{
		{0, 10 * time.Second, 0},
		{3 * time.Second, 8 * time.Second, 3000},
		{3 * time.Second, 3 * time.Second, 2500},   // 500 ms left to answer
		{3 * time.Second, 1 * time.Second, 800},    // a fifth of a short deadline
		{3 * time.Second, 2 * time.Millisecond, 1}, // never 0 once asked
		{time.Millisecond / 2, 5 * time.Second, 1}, // rounds up to 1
		{1500 * time.Millisecond, 10 * time.Second, 1500},
	} {
		if got := waitMs(tc.wait, tc.left); got != tc.want {
			t.Errorf("waitMs(%v, %v) = %d, want %d", tc.wait, tc.left, got, tc.want)
		}
	}
}

func TestWaitRequestFrame(t *testing.T) {
	sp := newSessionPeer(t)
	c := New(sp.path, WithDefaultTimeout(2*time.Second))
	defer c.Close()

	// No deadline: the default timeout on top of the wait.
	if _, err := c.Hold(context.Background(), "seat", "p", Seats{"E7"}, 0, WithSession(), WithWait(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	r := sp.last()
	if r.GetHold().GetWaitMs() != 3000 || !r.GetHold().GetSession() {
		t.Fatalf("wait_ms %d session %v", r.GetHold().GetWaitMs(), r.GetHold().GetSession())
	}
	if tm := r.GetTimeoutMs(); tm < 4900 || tm > 5000 {
		t.Fatalf("timeout_ms %d, want about wait + default timeout (5000)", tm)
	}

	// A deadline bounds the wait and leaves the daemon time to answer.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Hold(ctx, "ga", "p", Units{"adult": 1}, 0, WithWait(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	r = sp.last()
	w, tm := r.GetHold().GetWaitMs(), r.GetTimeoutMs()
	if tm > 2000 || tm < 1800 || w+400 > tm || w < 1300 {
		t.Fatalf("wait_ms %d timeout_ms %d under a 2 s deadline", w, tm)
	}

	// Without WithWait nothing changes.
	if _, err := c.Hold(context.Background(), "seat", "p", Seats{"E8"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	r = sp.last()
	if r.GetHold().GetWaitMs() != 0 || r.GetTimeoutMs() > 2000 {
		t.Fatalf("plain hold: wait_ms %d timeout_ms %d", r.GetHold().GetWaitMs(), r.GetTimeoutMs())
	}
}
