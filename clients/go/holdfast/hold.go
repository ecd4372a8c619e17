package holdfast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// secret holds the token behind a pointer: fmt prints nested pointers as
// addresses, so even reflection-based dumps of a Hold value (%+v, %#v on
// Hold rather than *Hold) cannot show it.
type secret = *tokenBox

type tokenBox struct{ v string }

func (*tokenBox) String() string   { return "[redacted]" }
func (*tokenBox) GoString() string { return `"[redacted]"` }

func newSecret(token string) secret { return &tokenBox{v: token} }

func (h *Hold) tokenValue() string {
	if h.token == nil {
		return ""
	}
	return h.token.v
}

// Hold is a granted hold on one or more resources of one partition. Its
// fields never change; it is safe for concurrent use (extend it from one
// goroutine while another confirms it).
//
// defer h.Close() gives the resources back on every path that does not
// confirm (the client contract's scope exit; see Close).
//
// A Hold never prints its token; Token returns it for the rare case where
// another process must resume the hold (see Client.HoldFromToken).
type Hold struct {
	Namespace string
	Partition string
	IDs       []string
	// Segment is the journey segment the hold covers (zero when none): its
	// Extend, Release, Confirm, Status and Close act on the same legs.
	Segment Segment
	// Fence is the hold's fencing number: it rises with every grant in the
	// partition, so a store can refuse writes from an older holder.
	Fence uint64
	// TTL is the time to live applied at grant (0 for a resumed hold).
	TTL time.Duration
	// Degraded is true when the namespace's best_effort policy answered
	// without Redis: nothing is actually held. Never set for fail_closed
	// namespaces.
	Degraded bool
	// Session is true for a session hold (WithSession): the daemon renews it
	// while the client's connection lives; Lost and Done report its loss.
	Session bool

	client *Client
	token  secret
	st     *holdState // released/confirmed, lost; behind a pointer so Hold values copy
}

// Token returns the hold's secret ownership proof. Keep it out of logs,
// URLs and error messages.
func (h *Hold) Token() string { return h.tokenValue() }

// String describes the hold without its token.
func (h Hold) String() string {
	seg := ""
	if !h.Segment.IsZero() {
		seg = " segment=" + h.Segment.String()
	}
	sess := ""
	if h.Session {
		sess = " session"
	}
	return fmt.Sprintf("hold %s/%s[%s]%s fence=%d ttl=%s%s", h.Namespace, h.Partition,
		strings.Join(h.IDs, ","), seg, h.Fence, h.TTL, sess)
}

// GoString keeps %#v from dumping the token.
func (h Hold) GoString() string { return "&holdfast.Hold{" + h.String() + "}" }

// LogValue keeps slog from dumping the token.
func (h Hold) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("namespace", h.Namespace),
		slog.String("partition", h.Partition),
		slog.Any("ids", h.IDs),
	}
	if !h.Segment.IsZero() {
		attrs = append(attrs, slog.String("segment", h.Segment.String()))
	}
	attrs = append(attrs, slog.Uint64("fence", h.Fence), slog.Duration("ttl", h.TTL))
	if h.Session {
		attrs = append(attrs, slog.Bool("session", true))
	}
	return slog.GroupValue(attrs...)
}

func ttlMs(ttl time.Duration) uint32 {
	if ttl <= 0 {
		return 0
	}
	return timeoutMs(ttl)
}

// Hold takes an expiring hold on ids of one partition, all or nothing.
// ttl 0 means the namespace's default TTL. Options:
//
//   - WithSegment(from, to) holds legs from .. to-1 of each id, in a
//     namespace with max_legs (and only there);
//   - WithSession() binds the hold to the client's connection: the daemon
//     renews it and releases it when the connection closes (ttl must be 0);
//     WithOnLost(f) is told if it is lost;
//   - WithWait(d) waits in line up to d while another token holds an id.
//
// For example:
//
//	h, err := c.Hold(ctx, "seat", "show-7", []string{"E7", "E8"}, 0,
//		holdfast.WithSession(), holdfast.WithWait(5*time.Second))
//	if err != nil { ... }
//	defer h.Close()
//
// Errors to expect: ErrHeldByAnother (ResourceOf names the resource),
// ErrConfirmed (already sold), ErrInvalidArgument, ErrNotFound (namespace),
// ErrUnavailable / ErrDeadlineExceeded (nothing granted that you know of;
// an unknown grant expires with its TTL, a session hold's with its session
// TTL).
func (c *Client) Hold(ctx context.Context, namespace, partition string, ids []string, ttl time.Duration, opts ...RequestOption) (*Hold, error) {
	const op = "hold"
	o := collect(opts)
	resp, cn, err := c.callOn(ctx, op, &pb.Request{Method: &pb.Request_Hold{Hold: &pb.HoldRequest{
		Namespace: namespace, Partition: partition, Ids: ids, TtlMs: ttlMs(ttl), Segment: o.segment.wire(),
		Session: o.session,
	}}}, o.wait)
	if err != nil {
		return nil, err
	}
	r := resp.GetHold()
	if r == nil {
		return nil, malformed(op, resp)
	}
	h := &Hold{
		Namespace: namespace,
		Partition: partition,
		IDs:       append([]string(nil), ids...),
		Segment:   o.segment,
		Fence:     r.GetFence(),
		TTL:       time.Duration(r.GetTtlMs()) * time.Millisecond,
		Degraded:  resp.GetDegraded(),
		client:    c,
		token:     newSecret(r.GetToken()),
		st:        newHoldState(),
	}
	// A degraded answer (best_effort without Redis) holds nothing: there is
	// no session to keep.
	if o.session && !h.Degraded {
		h.Session = true
		h.st = newSessionState(sessionKey{namespace, partition, h.Fence}, lostCallback(h, o.onLost))
		cn.sessions.register(h.st)
		cn.watchSessions()
	}
	return h, nil
}

// lostCallback adapts a WithOnLost callback to the hold it is about.
func lostCallback(h SessionHold, f func(SessionHold, error)) func(error) {
	if f == nil {
		return nil
	}
	return func(err error) { f(h, err) }
}

// Lost returns why a session hold was lost: the daemon reported it (the
// code says why: ErrNotHeld, ErrHeldByAnother, ErrConfirmed), or its
// connection ended (ErrUnavailable; it also matches ErrClosed after
// Client.Close). nil while it is held, and always nil for a plain hold (the
// client does not watch its TTL) or one released or confirmed through h
// before it was lost. Treat a lost hold as gone: take a new one.
func (h *Hold) Lost() error { return h.st.lost() }

// Done returns a channel that is closed when the session hold is lost (then
// Lost says why), like a context's Done. For a plain hold it is nil, which
// blocks forever in a select.
func (h *Hold) Done() <-chan struct{} { return h.st.done() }

// HoldFromToken rebuilds a Hold from its token, for a process that resumes
// a hold taken elsewhere (e.g. the checkout request after the seat-picking
// one). Nothing is sent to the daemon; Fence and TTL are zero. Pass the
// hold's WithSegment when it was taken with one. The result is a plain hold:
// a session hold lives and dies with the connection that took it.
func (c *Client) HoldFromToken(namespace, partition string, ids []string, token string, opts ...RequestOption) *Hold {
	return &Hold{Namespace: namespace, Partition: partition, IDs: append([]string(nil), ids...),
		Segment: collect(opts).segment, client: c, token: newSecret(token), st: newHoldState()}
}

// Extend sets the hold's remaining TTL to ttl from now (0: the namespace's
// default) and returns the TTL applied. ErrNotHeld means the hold expired;
// ErrHeldByAnother that someone else holds a resource now.
func (c *Client) Extend(ctx context.Context, h *Hold, ttl time.Duration) (time.Duration, error) {
	const op = "extend"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Extend{Extend: &pb.ExtendRequest{
		Namespace: h.Namespace, Partition: h.Partition, Ids: h.IDs, Token: h.tokenValue(), TtlMs: ttlMs(ttl),
		Segment: h.Segment.wire(),
	}}})
	if err != nil {
		return 0, err
	}
	r := resp.GetExtend()
	if r == nil {
		return 0, malformed(op, resp)
	}
	return time.Duration(r.GetTtlMs()) * time.Millisecond, nil
}

// Release gives the hold back and returns how many resources it released.
// Resources no longer held by this token are left alone and reported as
// ErrNotHeld or ErrHeldByAnother (with the count of those that were
// released).
func (c *Client) Release(ctx context.Context, h *Hold) (int, error) {
	const op = "release"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Release{Release: &pb.ReleaseRequest{
		Namespace: h.Namespace, Partition: h.Partition, Ids: h.IDs, Token: h.tokenValue(),
		Segment: h.Segment.wire(),
	}}})
	n := int(resp.GetRelease().GetReleased())
	if err != nil {
		return n, err
	}
	if resp.GetRelease() == nil {
		return 0, malformed(op, resp)
	}
	h.st.finish()
	return n, nil
}

// Close leaves the hold's scope, the same way in every holdfast client:
//
//   - after a successful Confirm or Release through this Hold it does nothing
//     (a confirmed hold is never released);
//   - otherwise it releases the hold, also after a failed Confirm;
//   - NOT_HELD (expired), HELD_BY_ANOTHER (expired and taken since),
//     CONFIRMED (sold) and a closed client are not errors: nothing is ours to
//     give back;
//   - any other failure is returned; the hold then expires with its TTL.
//
// Use it as defer h.Close() right after a successful Hold. The release runs
// with the client's default timeout.
func (h *Hold) Close() error {
	if h.st.isFinished() {
		return nil
	}
	_, err := h.client.Release(context.Background(), h)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed), IsNotHeld(err), IsHeldByAnother(err), IsConfirmed(err):
		h.st.finish()
		return nil
	}
	return err
}

// Extend is c.Extend(ctx, h, ttl).
func (h *Hold) Extend(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	return h.client.Extend(ctx, h, ttl)
}

// Release is c.Release(ctx, h).
func (h *Hold) Release(ctx context.Context) (int, error) {
	return h.client.Release(ctx, h)
}

// Confirm is c.Confirm(ctx, h, opts).
func (h *Hold) Confirm(ctx context.Context, opts ConfirmOptions) (*Confirmation, error) {
	return h.client.Confirm(ctx, h, opts)
}

// Status reports the hold's resources, with Owned set for those this hold
// still owns. Diagnostic only.
func (h *Hold) Status(ctx context.Context) ([]ResourceStatus, error) {
	return h.client.status(ctx, h.Namespace, h.Partition, h.IDs, h.tokenValue(), h.Segment)
}
