package holdfast

// Transport mechanics that a real daemon cannot be made to show on demand
// (answers out of order, answers that never come, a frame with id 0) are
// checked against a scripted peer on a Unix socket. Daemon behaviour is
// tested in live_test.go against a real holdfastd.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
	"google.golang.org/protobuf/proto"
)

// peer is a scripted stand-in for the daemon's socket. handle runs on the
// connection's read goroutine for each request; it may answer later through
// send.
type peer struct {
	t      *testing.T
	path   string
	ln     net.Listener
	handle func(p *peer, nc net.Conn, req *pb.Request)

	mu    sync.Mutex
	conns []net.Conn
	wmu   sync.Mutex
}

func newPeer(t *testing.T, handle func(p *peer, nc net.Conn, req *pb.Request)) *peer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hf.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, path: path, ln: ln, handle: handle}
	go p.accept()
	t.Cleanup(p.stop)
	return p
}

func (p *peer) accept() {
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, nc)
		p.mu.Unlock()
		go func() {
			for {
				body, err := readFrame(nc, 1<<20)
				if err != nil {
					return
				}
				req := &pb.Request{}
				if err := proto.Unmarshal(body, req); err != nil {
					return
				}
				p.handle(p, nc, req)
			}
		}()
	}
}

func (p *peer) send(nc net.Conn, resp *pb.Response) {
	frame, err := encodeFrame(resp, 0)
	if err != nil {
		p.t.Error(err)
		return
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, _ = nc.Write(frame)
}

// dropConns closes every accepted connection, as a daemon restart would.
func (p *peer) dropConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, nc := range p.conns {
		_ = nc.Close()
	}
	p.conns = nil
}

func (p *peer) stop() {
	_ = p.ln.Close()
	p.dropConns()
}

func okHealth(req *pb.Request) *pb.Response {
	return &pb.Response{Id: req.GetId(), CorrelationId: req.GetCorrelationId(), Code: CodeOK,
		Result: &pb.Response_Health{Health: &pb.HealthResponse{Live: true, Ready: true, Version: req.GetCorrelationId()}}}
}

func TestResponsesOutOfOrderReachTheirCallers(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	var held []*pb.Request
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		mu.Lock()
		held = append(held, req)
		ready := len(held) == n
		mu.Unlock()
		if ready { // answer all of them, newest first
			for i := n - 1; i >= 0; i-- {
				p.send(nc, okHealth(held[i]))
			}
		}
	})
	c := New(p.path)
	defer c.Close()

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			corr := fmt.Sprintf("caller-%d", i)
			ctx, cancel := context.WithTimeout(WithCorrelationID(context.Background(), corr), 5*time.Second)
			defer cancel()
			h, err := c.Health(ctx)
			if err != nil {
				errs <- err
				return
			}
			if h.GetVersion() != corr { // the peer echoes the correlation id here
				errs <- fmt.Errorf("caller %s got the answer for %s", corr, h.GetVersion())
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDeadlineIsSentAndEnforcedLocally(t *testing.T) {
	gotTimeout := make(chan uint32, 4)
	var silent sync.Once
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		first := false
		silent.Do(func() { first = true })
		if first { // never answer the first request in time
			gotTimeout <- req.GetTimeoutMs()
			go func() { time.Sleep(300 * time.Millisecond); p.send(nc, okHealth(req)) }()
			return
		}
		p.send(nc, okHealth(req))
	})
	c := New(p.path)
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := c.Health(ctx)
	if !errors.Is(err, ErrDeadlineExceeded) || !IsDeadlineExceeded(err) {
		t.Fatalf("want ErrDeadlineExceeded, got %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error should also match context.DeadlineExceeded: %v", err)
	}
	if ms := <-gotTimeout; ms == 0 || ms > 150 {
		t.Fatalf("timeout_ms sent = %d, want 1..150", ms)
	}

	// The late answer to the abandoned request must not reach the next call.
	time.Sleep(350 * time.Millisecond)
	ctx2 := WithCorrelationID(context.Background(), "second")
	h, err := c.Health(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	if h.GetVersion() != "second" {
		t.Fatalf("second call got a stale answer for %q", h.GetVersion())
	}
}

func TestExpiredContextSendsNothing(t *testing.T) {
	sent := make(chan struct{}, 1)
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) { sent <- struct{}{} })
	c := New(p.path)
	defer c.Close()
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.Hold(ctx, "seat", "p", Seats{"A1"}, 0); !IsDeadlineExceeded(err) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	select {
	case <-sent:
		t.Fatal("a request with an expired deadline was sent")
	default:
	}
}

func TestCancelledContextIsNotADeadline(t *testing.T) {
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {}) // never answers
	c := New(p.path)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := c.Health(ctx)
	if !errors.Is(err, context.Canceled) || IsDeadlineExceeded(err) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestConnectionLossFailsInFlightAndNextCallReconnects(t *testing.T) {
	var calls sync.Mutex
	n := 0
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if first {
			p.dropConns() // "daemon restarted" with this request in flight
			return
		}
		p.send(nc, okHealth(req))
	})
	c := New(p.path)
	defer c.Close()

	_, err := c.Health(context.Background())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("want ErrUnavailable for the request in flight, got %v", err)
	}
	if !strings.Contains(err.Error(), "outcome is unknown") {
		t.Fatalf("error should say the outcome is unknown: %v", err)
	}
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatalf("call after reconnect: %v", err)
	}
}

func TestDaemonDownWaitsUntilDeadlineThenUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nobody.sock")
	c := New(path)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Health(ctx)
	if !IsUnavailable(err) || !strings.Contains(err.Error(), path) {
		t.Fatalf("want ErrUnavailable naming the socket, got %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := Dial(ctx2, path); !IsUnavailable(err) {
		t.Fatalf("Dial: want ErrUnavailable, got %v", err)
	}
}

func TestFrameWithIDZeroFailsTheConnection(t *testing.T) {
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		p.send(nc, &pb.Response{Code: CodeInvalidArgument, Message: "undecodable request frame"})
		_ = nc.Close()
	})
	c := New(p.path)
	defer c.Close()
	_, err := c.Health(context.Background())
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "undecodable request frame") {
		t.Fatalf("want unavailable carrying the daemon's reason, got %v", err)
	}
}

func TestOversizedRequestFailsLocally(t *testing.T) {
	sent := make(chan struct{}, 1)
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) { sent <- struct{}{} })
	c := New(p.path, WithMaxFrameBytes(128))
	defer c.Close()
	ids := make(Seats, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("resource-%03d", i)
	}
	_, err := c.Hold(context.Background(), "seat", "p", ids, 0)
	if !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("want ErrResourceExhausted, got %v", err)
	}
	select {
	case <-sent:
		t.Fatal("oversized request reached the socket")
	default:
	}
}

func TestErrorResponseMapsToError(t *testing.T) {
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		p.send(nc, &pb.Response{Id: req.GetId(), CorrelationId: req.GetCorrelationId(),
			Code: CodeHeldByAnother, Message: "resource E8 is held by another token",
			Error: &pb.ErrorDetail{ResourceId: "E8"}})
	})
	c := New(p.path)
	defer c.Close()
	ctx := WithCorrelationID(context.Background(), "trace-1")
	_, err := c.Hold(ctx, "seat", "run-1", Seats{"E7", "E8"}, time.Minute)
	var he *Error
	if !errors.As(err, &he) {
		t.Fatalf("want *Error, got %T %v", err, err)
	}
	if !errors.Is(err, ErrHeldByAnother) || !IsHeldByAnother(err) || errors.Is(err, ErrNotHeld) {
		t.Fatalf("code matching is wrong for %v", err)
	}
	if he.ResourceID != "E8" || ResourceOf(err) != "E8" || he.CorrelationID != "trace-1" || he.Op != "hold" {
		t.Fatalf("detail lost: %+v", he)
	}
}

func TestCloseFailsInFlightAndLaterCalls(t *testing.T) {
	got := make(chan struct{}, 1)
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) { got <- struct{}{} }) // never answers
	c := New(p.path)
	done := make(chan error, 1)
	go func() { _, err := c.Health(context.Background()); done <- err }()
	<-got
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("in-flight call: want ErrClosed, got %v", err)
	}
	if _, err := c.Hold(context.Background(), "seat", "p", Seats{"A1"}, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: want ErrClosed, got %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestHoldNeverPrintsItsToken(t *testing.T) {
	const token = "1764412345678901.q83vEjRWeJCrze8SNFZ4kA"
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		p.send(nc, &pb.Response{Id: req.GetId(), Code: CodeOK,
			Result: &pb.Response_Hold{Hold: &pb.HoldResponse{Token: token, Fence: 1764412345678901, TtlMs: 60000}}})
	})
	c := New(p.path)
	defer c.Close()
	h, err := c.Hold(context.Background(), "seat", "run-1", Seats{"E7"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if h.Token() != token || h.Fence != 1764412345678901 || h.TTL != time.Minute {
		t.Fatalf("hold fields wrong: %v", h)
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("held", "hold", h)
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("held", "hold", h)
	for _, s := range []string{
		h.String(), fmt.Sprint(h), fmt.Sprintf("%v %+v %#v %s", h, h, h, h),
		fmt.Sprintf("%v %+v %#v", *h, *h, *h), logBuf.String(),
	} {
		if strings.Contains(s, token) || strings.Contains(s, "q83vEjRWeJCrze8SNFZ4kA") {
			t.Fatalf("token leaked into %q", s)
		}
	}
	if !strings.Contains(h.String(), "E7") {
		t.Fatalf("String should still describe the hold: %q", h.String())
	}
}

// --- The read/write path: leader/followers and coalesced writes ------------

// echoHealth answers a Health with the request's correlation id as version.
func echoHealth(t *testing.T, c *Client, ctx context.Context, corr string) error {
	t.Helper()
	h, err := c.Health(WithCorrelationID(ctx, corr))
	if err != nil {
		return err
	}
	if h.GetVersion() != corr {
		return fmt.Errorf("caller %s got the answer for %s", corr, h.GetVersion())
	}
	return nil
}

func TestManyCallersGetTheirOwnAnswersInAnyOrder(t *testing.T) {
	// Each answer goes out after a random delay, so answers overtake one
	// another and whichever caller reads hands the others theirs.
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		d := time.Duration(rand.IntN(300)) * time.Microsecond
		go func() { time.Sleep(d); p.send(nc, okHealth(req)) }()
	})
	c := New(p.path)
	defer c.Close()
	const goroutines, calls = 16, 60
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				if err := echoHealth(t, c, context.Background(), fmt.Sprintf("g%d-%d", g, i)); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// heldPeer keeps every request until the test answers it.
type heldPeer struct {
	*peer
	reqs chan *pb.Request
	mu   sync.Mutex
	nc   net.Conn
}

func newHeldPeer(t *testing.T) *heldPeer {
	hp := &heldPeer{reqs: make(chan *pb.Request, 64)}
	hp.peer = newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		hp.mu.Lock()
		hp.nc = nc
		hp.mu.Unlock()
		hp.reqs <- req
	})
	return hp
}

func (hp *heldPeer) next(t *testing.T) *pb.Request {
	t.Helper()
	select {
	case req := <-hp.reqs:
		return req
	case <-time.After(5 * time.Second):
		t.Fatal("no request came")
		return nil
	}
}

func (hp *heldPeer) answer(req *pb.Request) {
	hp.mu.Lock()
	nc := hp.nc
	hp.mu.Unlock()
	hp.send(nc, okHealth(req))
}

func TestReaderHandsOffToAWaitingCaller(t *testing.T) {
	for _, how := range []string{"answered", "deadline", "cancelled"} {
		t.Run(how, func(t *testing.T) {
			hp := newHeldPeer(t)
			c := New(hp.path)
			defer c.Close()
			// a calls first and reads for both; b waits behind it.
			ctxA, cancelA := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancelA()
			if how == "deadline" {
				ctxA, cancelA = context.WithTimeout(context.Background(), 150*time.Millisecond)
				defer cancelA()
			}
			doneA := make(chan error, 1)
			go func() { doneA <- echoHealth(t, c, ctxA, "a") }()
			reqA := hp.next(t)
			doneB := make(chan error, 1)
			go func() { doneB <- echoHealth(t, c, context.Background(), "b") }()
			reqB := hp.next(t)

			switch how {
			case "answered":
				hp.answer(reqA)
			case "cancelled":
				time.Sleep(20 * time.Millisecond)
				cancelA()
			}
			errA := <-doneA
			switch how {
			case "answered":
				if errA != nil {
					t.Fatalf("a: %v", errA)
				}
			case "deadline":
				if !IsDeadlineExceeded(errA) {
					t.Fatalf("a: want deadline exceeded, got %v", errA)
				}
			case "cancelled":
				if !errors.Is(errA, context.Canceled) {
					t.Fatalf("a: want context.Canceled, got %v", errA)
				}
			}
			// a is gone; b's answer (and a's late one, dropped) must still
			// be read, now by b.
			select {
			case err := <-doneB:
				t.Fatalf("b returned before its answer: %v", err)
			case <-time.After(30 * time.Millisecond):
			}
			if how != "answered" {
				hp.answer(reqA)
			}
			hp.answer(reqB)
			select {
			case err := <-doneB:
				if err != nil {
					t.Fatalf("b: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("b never got its answer: the read role was not handed on")
			}
			// The connection is still in order.
			go func() { hp.answer(hp.next(t)) }()
			if err := echoHealth(t, c, context.Background(), "after"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSessionEventWithNoCallInFlight(t *testing.T) {
	sp := newSessionPeer(t)
	c := New(sp.path)
	defer c.Close()
	ctx := context.Background()
	a, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Hold(ctx, "seat", "p", Seats{"E8"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	// Nobody calls: the background reader must see the event.
	sp.send(sp.conn(), sessionEvent(&pb.SessionHoldLost{Namespace: "seat", Partition: "p", Fence: a.Fence, Reason: CodeNotHeld}))
	if err := waitLost(t, a); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a: want ErrNotHeld, got %v", err)
	}
	// Calls still work beside the background reader, and an event that
	// comes between them is delivered too.
	for i := 0; i < 20; i++ {
		if err := echoHealth(t, c, ctx, fmt.Sprintf("h%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	sp.send(sp.conn(), sessionEvent(&pb.SessionHoldLost{Namespace: "seat", Partition: "p", Fence: b.Fence, Reason: CodeConfirmed}))
	if err := waitLost(t, b); !errors.Is(err, ErrConfirmed) {
		t.Fatalf("b: want ErrConfirmed, got %v", err)
	}
	// With no session hold left, calls read their own answers again.
	for i := 0; i < 20; i++ {
		if err := echoHealth(t, c, ctx, fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// And a later session hold is watched again.
	d, err := c.Hold(ctx, "seat", "p", Seats{"E9"}, 0, WithSession())
	if err != nil {
		t.Fatal(err)
	}
	sp.dropConns()
	if err := waitLost(t, d); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("d: want ErrUnavailable, got %v", err)
	}
}

func TestBrokenConnectionFailsEveryWaiter(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	seen := 0
	drop := true
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		mu.Lock()
		seen++
		dropNow := drop && seen == n
		if dropNow {
			drop = false
		}
		live := !drop && !dropNow
		mu.Unlock()
		if dropNow {
			p.dropConns()
		}
		if live {
			p.send(nc, okHealth(req))
		}
	})
	c := New(p.path)
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			errs <- echoHealth(t, c, ctx, fmt.Sprintf("w%d", i))
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !IsUnavailable(err) || !strings.Contains(err.Error(), "outcome is unknown") {
			t.Errorf("want ErrUnavailable with an unknown outcome, got %v", err)
		}
	}
	if err := echoHealth(t, c, context.Background(), "again"); err != nil {
		t.Fatalf("call after the loss: %v", err)
	}
}

func TestPerCallDeadlinesAmongConcurrentCalls(t *testing.T) {
	// "slow" calls are never answered in time; "fast" ones are, after a
	// while. Whichever call reads, each slow one fails at its own deadline
	// and each fast one gets its answer.
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		if strings.HasPrefix(req.GetCorrelationId(), "fast") {
			go func() { time.Sleep(400 * time.Millisecond); p.send(nc, okHealth(req)) }()
			return
		}
		go func() { time.Sleep(time.Second); p.send(nc, okHealth(req)) }() // late: dropped
	})
	c := New(p.path)
	defer c.Close()
	type res struct {
		name  string
		d     time.Duration
		took  time.Duration
		err   error
		isDue bool
	}
	var wg sync.WaitGroup
	out := make(chan res, 16)
	start := func(name string, d time.Duration, slow bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			t0 := time.Now()
			err := echoHealth(t, c, ctx, name)
			out <- res{name, d, time.Since(t0), err, slow}
		}()
	}
	for round := 0; round < 2; round++ {
		start(fmt.Sprintf("slow-%d-a", round), 100*time.Millisecond, true) // likely the reader
		time.Sleep(5 * time.Millisecond)
		start(fmt.Sprintf("fast-%d-a", round), 3*time.Second, false)
		start(fmt.Sprintf("slow-%d-b", round), 200*time.Millisecond, true)
		start(fmt.Sprintf("fast-%d-b", round), 3*time.Second, false)
		start(fmt.Sprintf("slow-%d-c", round), 300*time.Millisecond, true)
		wg.Wait()
	}
	close(out)
	for r := range out {
		if r.isDue {
			if !IsDeadlineExceeded(r.err) {
				t.Errorf("%s: want deadline exceeded, got %v", r.name, r.err)
			}
			// Late answers come at 1 s: failing well before that is the
			// call's own deadline at work (slack for a loaded machine).
			if r.took < r.d-5*time.Millisecond || r.took > r.d+450*time.Millisecond {
				t.Errorf("%s: failed after %v, its deadline was %v", r.name, r.took, r.d)
			}
		} else if r.err != nil {
			t.Errorf("%s: %v", r.name, r.err)
		}
	}
}

func TestDefaultTimeoutWithoutContextDeadline(t *testing.T) {
	// A context without a deadline gets the client's default, for the
	// reader and for a caller waiting behind it.
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {}) // never answers
	c := New(p.path, WithDefaultTimeout(150*time.Millisecond))
	defer c.Close()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			t0 := time.Now()
			err := echoHealth(t, c, context.Background(), fmt.Sprintf("d%d", i))
			if !IsDeadlineExceeded(err) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("want deadline exceeded, got %v", err)
			}
			if took := time.Since(t0); took < 140*time.Millisecond || took > 600*time.Millisecond {
				t.Errorf("failed after %v, want about 150ms", took)
			}
		}(i)
	}
	wg.Wait()
}

func TestIdleConnectionToARestartedDaemonResends(t *testing.T) {
	// Nobody reads an idle connection (no session holds): the daemon's
	// restart is found by the next write, which fails before the frame is
	// sent, so the call goes again on a fresh connection.
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		mu.Lock()
		conns[nc] = true
		mu.Unlock()
		p.send(nc, okHealth(req))
	})
	c := New(p.path)
	defer c.Close()
	if err := echoHealth(t, c, context.Background(), "first"); err != nil {
		t.Fatal(err)
	}
	p.dropConns()
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if err := echoHealth(t, c, context.Background(), fmt.Sprintf("after-%d", i)); err != nil {
			t.Fatalf("call %d after the restart: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 2 {
		t.Fatalf("%d connections, want 2", len(conns))
	}
}

func TestStuckWriteFailsTheConnectionAndUnsentCallsGoAgain(t *testing.T) {
	// The first connection is never read: the socket's buffer fills, the
	// writing call's deadline passes mid-write and the connection fails.
	// The frames queued behind that write were never acted on: those calls
	// go again on a fresh connection, which is served.
	path := filepath.Join(t.TempDir(), "hf.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	served := make(chan string, 64)
	go func() {
		for n := 0; ; n++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			if n == 0 {
				continue // never read
			}
			go func() {
				for {
					body, err := readFrame(nc, 16<<20)
					if err != nil {
						return
					}
					req := &pb.Request{}
					if err := proto.Unmarshal(body, req); err != nil {
						return
					}
					served <- req.GetCorrelationId()
					frame, _ := encodeFrame(okHealth(req), 0)
					_, _ = nc.Write(frame)
				}
			}()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
	}()

	c := New(path, WithMaxFrameBytes(2<<20))
	defer c.Close()
	// Call 0's frame (about 1 MB) is more than the unread socket takes: its
	// write blocks until call 0's deadline. The others' small frames are
	// queued behind it meanwhile.
	big := make(Seats, 10000)
	for i := range big {
		big[i] = fmt.Sprintf("%0100d", i)
	}
	ctx0, cancel0 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel0()
	done0 := make(chan error, 1)
	go func() {
		_, err := c.Status(ctx0, "seat", "p", big)
		done0 <- err
	}()
	time.Sleep(50 * time.Millisecond)
	const n = 7
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			errs[i] = echoHealth(t, c, ctx, fmt.Sprintf("c%d", i))
		}(i)
	}
	wg.Wait()
	if err := <-done0; !IsDeadlineExceeded(err) {
		t.Errorf("the stuck writer: want deadline exceeded, got %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d, queued behind the stuck write: want it sent again and answered, got %v", i, err)
		}
	}
	got := map[string]bool{}
	for len(served) > 0 {
		got[<-served] = true
	}
	for i := 0; i < n; i++ {
		if !got[fmt.Sprintf("c%d", i)] {
			t.Errorf("c%d was not served on the fresh connection", i)
		}
	}
}
