package holdfast

import (
	"fmt"
	"time"
)

// RequestOption adds an optional field to a request: WithSegment (Hold,
// Resume, Status of Seats), WithSession and WithOnLost (Hold of Seats),
// WithWait (Hold).
type RequestOption func(*requestOptions)

type requestOptions struct {
	segment Segment
	session bool
	onLost  func(SessionHold, error)
	wait    time.Duration
}

// WithSegment makes the request act on legs fromStop .. toStop-1 of each seat,
// in a namespace with max_legs > 0 (and only there). A Hold taken with it
// keeps the segment for its Extend, Release, Confirm, Status and Close.
func WithSegment(fromStop, toStop uint32) RequestOption {
	return func(o *requestOptions) { o.segment = Segment{FromStop: fromStop, ToStop: toStop} }
}

// WithSession makes the hold a session hold (docs/sessions.md), bound to the
// client's connection: while the connection lives the daemon keeps its TTL
// topped up (the namespace's session_ttl_ms; pass ttl 0), and when the
// connection closes (Client.Close, the process exits or is killed) the
// daemon releases it at once. No extend loop is needed.
//
// A session hold the daemon cannot keep (it expired while Redis was away,
// its token was released or confirmed on another connection, ...) is
// reported: its Done channel closes, Lost returns why (ErrNotHeld,
// ErrHeldByAnother or ErrConfirmed as the code), and the WithOnLost callback
// runs. The end of the connection is reported the same way (ErrUnavailable;
// errors.Is(err, ErrClosed) after Client.Close). Release and Confirm a
// session hold through the same Client.
func WithSession() RequestOption {
	return func(o *requestOptions) { o.session = true }
}

// SessionHold is a session hold as a WithOnLost callback sees it (a *Hold).
type SessionHold interface {
	fmt.Stringer
	// Lost is why the hold was lost (nil while it is held).
	Lost() error
	// Done is closed when the hold is lost.
	Done() <-chan struct{}
}

// WithOnLost sets a callback for a session hold (WithSession) that is lost:
// it runs once, on a goroutine of its own, with the hold and the error Lost
// returns. It is not called for a hold released or confirmed through its
// Hold value. Plain holds ignore it.
func WithOnLost(f func(h SessionHold, err error)) RequestOption {
	return func(o *requestOptions) { o.onLost = f }
}

// WithWait makes a Hold wait in line for up to d when a resource is held by
// another token (HoldRequest.wait_ms, docs/waiting.md), instead of answering
// ErrHeldByAnother at once. Waiters on one resource are served in arrival
// order; a multi-id hold waits for all its ids. When the wait runs out the
// answer is ErrHeldByAnother (a sold resource answers ErrConfirmed at once).
//
// The call's deadline makes room for the wait: a context without a deadline
// gets the client's default timeout on top of d; a context deadline bounds
// the wait, which is cut so that the daemon still answers before it (by
// 500 ms, or a fifth of the time left when that is less). The daemon also
// caps a request's deadline at its limits.max_timeout_ms (30 s by default).
// A daemon that predates waiting in line answers at once, as without it.
func WithWait(d time.Duration) RequestOption {
	return func(o *requestOptions) {
		if d > 0 {
			o.wait = d
		}
	}
}

func collect(opts []RequestOption) requestOptions {
	var o requestOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}
