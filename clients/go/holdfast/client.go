package holdfast

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// Defaults for a Client; see the Option functions. The socket, timeout and
// reconnect values are the client contract's
// (protos/contract/client-contract.md), shared by every holdfast client.
const (
	// DefaultSocketPath is where the packaged daemon listens.
	DefaultSocketPath = "/run/holdfast/holdfast.sock"
	// SocketEnv names the environment variable that overrides it.
	SocketEnv            = "HOLDFAST_SOCKET"
	DefaultTimeout       = 5 * time.Second
	DefaultMaxFrameBytes = 64 << 10 // the daemon's default limits.max_frame_bytes
	defaultMaxReadBytes  = 16 << 20 // metrics text can be large; still bounded

	// Waits between dial attempts while the daemon is away: 20 ms doubling
	// to 500 ms, each shortened by up to 20 % at random.
	minDialBackoff    = 20 * time.Millisecond
	dialMultiplier    = 2
	maxDialBackoff    = 500 * time.Millisecond
	dialBackoffJitter = 0.2
)

// DefaultSocket returns the socket a client uses when given none:
// $HOLDFAST_SOCKET when set and not empty, else DefaultSocketPath.
func DefaultSocket() string {
	if s := os.Getenv(SocketEnv); s != "" {
		return s
	}
	return DefaultSocketPath
}

// dialDelay is the wait before dial attempt attempt+1 (0-based) for a
// uniform random u in [0, 1): the nominal wait shortened by the jitter.
func dialDelay(attempt int, u float64) time.Duration {
	d := minDialBackoff
	for i := 0; i < attempt && d < maxDialBackoff; i++ {
		d *= dialMultiplier
	}
	d = min(d, maxDialBackoff)
	return time.Duration(float64(d) * (1 - dialBackoffJitter*u))
}

// Client talks to one holdfastd over its Unix socket. It is safe for
// concurrent use; share one per process (or per daemon socket).
type Client struct {
	path           string
	defaultTimeout time.Duration
	maxFrame       int
	maxRead        int
	traceParent    func(context.Context) string // WithTraceParentFunc; nil: none

	nextID atomic.Uint64

	mu     sync.Mutex
	cur    *conn // nil until the first call, or after it failed
	closed bool

	dialSem  chan struct{} // one dial at a time; a channel so waiters respect ctx
	closedCh chan struct{}
}

// Option configures a Client.
type Option func(*Client)

// WithDefaultTimeout sets the deadline applied to calls whose context has
// none (default 5s). The deadline is sent to the daemon as timeout_ms.
func WithDefaultTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.defaultTimeout = d
		}
	}
}

// WithMaxFrameBytes sets the largest request the client will send (default
// 64 KiB, the daemon's default). Keep it at or below the daemon's
// limits.max_frame_bytes: the daemon drops a connection that exceeds it.
func WithMaxFrameBytes(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxFrame = n
		}
	}
}

// New returns a Client for the daemon listening on socketPath ("" means
// DefaultSocket(): $HOLDFAST_SOCKET, else /run/holdfast/holdfast.sock). It
// does not connect: the first call does, and so does the first call after the
// daemon restarted. Use Dial to connect (and fail) up front.
func New(socketPath string, opts ...Option) *Client {
	if socketPath == "" {
		socketPath = DefaultSocket()
	}
	c := &Client{
		path:           socketPath,
		defaultTimeout: DefaultTimeout,
		maxFrame:       DefaultMaxFrameBytes,
		maxRead:        defaultMaxReadBytes,
		dialSem:        make(chan struct{}, 1),
		closedCh:       make(chan struct{}),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Dial returns a connected Client, waiting for the daemon's socket until
// ctx's deadline (or the default timeout). socketPath "" means DefaultSocket().
func Dial(ctx context.Context, socketPath string, opts ...Option) (*Client, error) {
	c := New(socketPath, opts...)
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	if _, err := c.getConn(ctx, "dial"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// SocketPath returns the daemon socket this client talks to.
func (c *Client) SocketPath() string { return c.path }

// Close closes the connection. Calls in flight and later calls fail with
// ErrClosed. Plain holds are not released: they expire with their TTL.
// Session holds (WithSession) end with the connection: the daemon releases
// them at once, and each reports Lost (matching ErrClosed).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cur := c.cur
	c.cur = nil
	close(c.closedCh)
	c.mu.Unlock()
	if cur != nil {
		cur.fail(ErrClosed)
	}
	return nil
}

func (c *Client) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.defaultTimeout)
}

// getConn returns the live connection, dialing (and re-dialing while the
// daemon is down) until ctx is done.
func (c *Client) getConn(ctx context.Context, op string) (*conn, error) {
	if cn, err := c.current(); cn != nil || err != nil {
		return cn, err
	}
	select {
	case c.dialSem <- struct{}{}:
		defer func() { <-c.dialSem }()
	case <-ctx.Done():
		return nil, c.ctxError(ctx, op, "", nil)
	case <-c.closedCh:
		return nil, ErrClosed
	}
	// Another caller may have dialed while we waited.
	if cn, err := c.current(); cn != nil || err != nil {
		return cn, err
	}

	var d net.Dialer
	for attempt := 0; ; attempt++ {
		nc, err := d.DialContext(ctx, "unix", c.path)
		if err == nil {
			cn := newConn(nc, c.maxRead)
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				cn.fail(ErrClosed)
				return nil, ErrClosed
			}
			c.cur = cn
			c.mu.Unlock()
			return cn, nil
		}
		if ctx.Err() != nil {
			return nil, c.unreachable(op, err)
		}
		t := time.NewTimer(dialDelay(attempt, rand.Float64()))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, c.unreachable(op, err)
		case <-c.closedCh:
			t.Stop()
			return nil, ErrClosed
		}
	}
}

// current returns the live conn, (nil, nil) when one must be dialed, or
// ErrClosed.
func (c *Client) current() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cur != nil && !c.cur.isDead() {
		return c.cur, nil
	}
	c.cur = nil
	return nil, nil
}

func (c *Client) unreachable(op string, cause error) error {
	return &Error{Op: op, Code: CodeUnavailable,
		Message: fmt.Sprintf("cannot reach holdfastd at %s", c.path), cause: cause}
}

// ctxError turns a finished context into the call's error: a deadline is
// CodeDeadlineExceeded (and also matches context.DeadlineExceeded); a
// cancellation is returned as context.Canceled, wrapped.
func (c *Client) ctxError(ctx context.Context, op, corr string, cause error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := "deadline passed before holdfastd answered"
		if cause != nil {
			msg += " (" + cause.Error() + ")"
		}
		return &Error{Op: op, Code: CodeDeadlineExceeded, Message: msg,
			CorrelationID: corr, cause: context.DeadlineExceeded}
	}
	return fmt.Errorf("holdfast: %s: %w", op, ctx.Err())
}

// timeoutMs converts the time left into the request's timeout_ms, rounding
// up so the daemon never gets 0 (which would mean "its default").
func timeoutMs(left time.Duration) uint32 {
	ms := (left + time.Millisecond - 1) / time.Millisecond
	if ms < 1 {
		ms = 1
	}
	if ms > math.MaxUint32 {
		ms = math.MaxUint32
	}
	return uint32(ms)
}

// waitMargin is the most of a call's time left that a Hold's wait in line
// leaves for the daemon to take the hold and answer, so that a wait that
// runs out is answered (HELD_BY_ANOTHER) before the call's deadline.
const waitMargin = 500 * time.Millisecond

// waitMs is the wait_ms sent with wait asked and left of the call's time:
// the wait, cut so that the daemon answers before the deadline (a margin of
// waitMargin, or a fifth of what is left when that is short). At least 1 ms
// when a wait was asked.
func waitMs(wait, left time.Duration) uint32 {
	if wait <= 0 {
		return 0
	}
	margin := min(waitMargin, left/5)
	if w := left - margin; wait > w {
		wait = w
	}
	if wait < time.Millisecond {
		return 1
	}
	if wait/time.Millisecond > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(wait / time.Millisecond)
}

// call sends req and waits for its response. It fills in id, correlation id,
// traceparent and timeout_ms, and turns non-OK codes into *Error.
func (c *Client) call(ctx context.Context, op string, req *pb.Request) (*pb.Response, error) {
	resp, _, err := c.callOn(ctx, op, req, 0)
	return resp, err
}

// callOn is call that also returns the connection the answer came on (a
// session hold belongs to it). wait > 0 is a Hold's wait in line: a context
// without a deadline then gets the client's default timeout on top of the
// wait, and every attempt sends wait_ms cut to fit the time left (waitMs).
//
// The call's deadline is ctx's, else now plus the default timeout; no
// context is derived for it (the wait for the answer enforces it).
func (c *Client) callOn(ctx context.Context, op string, req *pb.Request, wait time.Duration) (*pb.Response, *conn, error) {
	deadline, hasDeadline := ctx.Deadline()
	if !hasDeadline {
		deadline = time.Now().Add(c.defaultTimeout + max(wait, 0))
	}

	req.CorrelationId = CorrelationID(ctx)
	if req.CorrelationId == "" {
		req.CorrelationId = newCorrelationID()
	}
	corr := req.CorrelationId
	req.Traceparent = c.traceParentFor(ctx)

	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return nil, nil, c.deadlineError(ctx, op, corr, nil)
		}
		cn, err := c.connFor(ctx, deadline, hasDeadline, op)
		if err != nil {
			return nil, nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil, c.deadlineError(ctx, op, corr, nil)
		}
		req.Id = c.nextID.Add(1)
		req.TimeoutMs = timeoutMs(left)
		if h := req.GetHold(); h != nil && wait > 0 {
			h.WaitMs = waitMs(wait, left)
		}
		fb := framePool.Get().(*[]byte)
		*fb, err = appendFrame((*fb)[:0], req, c.maxFrame)
		if err != nil {
			putFrame(fb)
			return nil, nil, &Error{Op: op, Code: CodeResourceExhausted, Message: err.Error(), CorrelationID: corr}
		}
		cl := getCall(req.Id)
		if err := cn.register(cl); err != nil {
			putFrame(fb)
			putCall(cl)
			// Died between connFor and now; nothing was sent, so dial again.
			if errors.Is(err, ErrClosed) {
				return nil, nil, ErrClosed
			}
			continue
		}
		cn.send(cl, *fb, deadline)
		putFrame(fb)
		resp, outcome, err := cn.await(ctx, cl, deadline, hasDeadline)
		putCall(cl)
		switch outcome {
		case answered:
			resp, err := c.result(op, resp)
			return resp, cn, err
		case timedOut:
			return nil, nil, c.deadlineError(ctx, op, corr, nil)
		case notSent:
			if errors.Is(err, ErrClosed) {
				return nil, nil, ErrClosed
			}
			// An incomplete frame is never acted on by the daemon, so one
			// resend on a fresh connection is safe (the usual case: the
			// daemon restarted while this client sat idle).
			expired := ctx.Err() != nil || !time.Now().Before(deadline)
			if attempt == 0 && !expired {
				continue
			}
			if expired {
				return nil, nil, c.deadlineError(ctx, op, corr, err)
			}
			return nil, nil, &Error{Op: op, Code: CodeUnavailable, Message: "could not send the request", CorrelationID: corr, cause: err}
		default: // connLost
			if errors.Is(err, ErrClosed) {
				return nil, nil, ErrClosed
			}
			return nil, nil, &Error{Op: op, Code: CodeUnavailable,
				Message:       "connection to holdfastd lost before the answer; the outcome is unknown",
				CorrelationID: corr, cause: err}
		}
	}
}

// connFor is getConn for a call: the live connection at once, else a dial
// bounded by the call's deadline.
func (c *Client) connFor(ctx context.Context, deadline time.Time, hasDeadline bool, op string) (*conn, error) {
	if cn, err := c.current(); cn != nil || err != nil {
		return cn, err
	}
	if !hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return c.getConn(ctx, op)
}

// deadlineError is the error of a call whose time ran out: cancelled (ctx
// says so) or past its deadline (ctx's, or the default timeout's when ctx
// has none).
func (c *Client) deadlineError(ctx context.Context, op, corr string, cause error) error {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("holdfast: %s: %w", op, err)
	}
	msg := "deadline passed before holdfastd answered"
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	return &Error{Op: op, Code: CodeDeadlineExceeded, Message: msg,
		CorrelationID: corr, cause: context.DeadlineExceeded}
}

// result maps a response to (resp, nil) for CODE_OK or to an *Error.
func (c *Client) result(op string, resp *pb.Response) (*pb.Response, error) {
	if resp.GetCode() == CodeOK {
		return resp, nil
	}
	code := resp.GetCode()
	msg := resp.GetMessage()
	if code == pb.Code_CODE_UNSPECIFIED {
		code = CodeInternal
		msg = "daemon answered without a result code: " + msg
	}
	return resp, &Error{
		Op:            op,
		Code:          code,
		Message:       msg,
		Field:         resp.GetError().GetField(),
		ResourceID:    resp.GetError().GetResourceId(),
		CorrelationID: resp.GetCorrelationId(),
		Degraded:      resp.GetDegraded(),
	}
}

func malformed(op string, resp *pb.Response) error {
	return &Error{Op: op, Code: CodeInternal,
		Message: "daemon answered OK without a " + op + " result", CorrelationID: resp.GetCorrelationId()}
}
