package holdfast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Hold is a granted hold on a Target of one partition: Seats, or Units of
// its pools; the one handle type for both. Its fields never change; it is
// safe for concurrent use (extend it from one goroutine while another
// confirms it).
//
// defer h.Close() gives the seats or units back on every path that does not
// confirm (the client contract's scope exit; see Close).
//
// A Hold never prints its token; Token returns it for the rare case where
// another process must resume the hold (see Client.Resume).
type Hold struct {
	Namespace string
	Partition string
	// Target is what the hold covers (Seats or Units), a copy of the one
	// asked for.
	Target Target
	// IDs are the seat ids (nil for units).
	//
	// Deprecated: use Hold.Target, a Seats for a hold of seats.
	IDs []string
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

// newHold is a Hold on its own copy of target, not yet granted.
func newHold(c *Client, namespace, partition string, target Target, seg Segment, token string) *Hold {
	h := &Hold{Namespace: namespace, Partition: partition, Segment: seg,
		client: c, token: newSecret(token), st: newHoldState()}
	if target != nil {
		h.Target = target.clone()
	}
	if s, ok := h.Target.(Seats); ok {
		h.IDs = s
	}
	return h
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
	return fmt.Sprintf("hold %s/%s[%v]%s fence=%d ttl=%s%s", h.Namespace, h.Partition,
		h.Target, seg, h.Fence, h.TTL, sess)
}

// GoString keeps %#v from dumping the token.
func (h Hold) GoString() string { return "&holdfast.Hold{" + h.String() + "}" }

// LogValue keeps slog from dumping the token.
func (h Hold) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("namespace", h.Namespace),
		slog.String("partition", h.Partition),
	}
	switch t := h.Target.(type) {
	case Seats:
		attrs = append(attrs, slog.Any("ids", []string(t)))
	case Units:
		attrs = append(attrs, slog.String("units", t.String()))
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

// Hold takes an expiring hold on target, all or nothing: Seats of the
// partition, or Units of its pools (a namespace of kind "pools"). ttl 0
// means the namespace's default TTL. Options:
//
//   - WithSegment(from, to) holds legs from .. to-1 of each seat, in a
//     namespace with max_legs (and only there);
//   - WithSession() binds a hold of seats to the client's connection: the
//     daemon renews it and releases it when the connection closes (ttl must
//     be 0); WithOnLost(f) is told if it is lost. Refused for Units
//     (ErrInvalidArgument, field "session", nothing sent): holdfastd keeps
//     session holds of seats only;
//   - WithWait(d) waits in line up to d while another token holds a seat or
//     the units asked for.
//
// For example:
//
//	h, err := c.Hold(ctx, "seat", "show-7", holdfast.Seats{"E7", "E8"}, 0,
//		holdfast.WithSession(), holdfast.WithWait(5*time.Second))
//	if err != nil { ... }
//	defer h.Close()
//
//	h, err := c.Hold(ctx, "ga", "show-7", holdfast.Units{"adult": 2, "child": 1}, 10*time.Minute)
//
// Errors to expect: ErrHeldByAnother (ResourceOf names the seat or pool;
// for units: fewer free than asked, the rest held), ErrConfirmed (already
// sold; for units: fewer left unsold than asked), ErrInvalidArgument,
// ErrNotFound (namespace), ErrUnavailable / ErrDeadlineExceeded (nothing
// granted that you know of; an unknown grant expires with its TTL, a
// session hold's with its session TTL).
func (c *Client) Hold(ctx context.Context, namespace, partition string, target Target, ttl time.Duration, opts ...RequestOption) (*Hold, error) {
	const op = "hold"
	o := collect(opts)
	if _, units := target.(Units); units && o.session {
		// The daemon would grant a plain hold with the default TTL instead.
		return nil, &Error{Op: op, Code: CodeInvalidArgument, Field: "session",
			Message: "holdfastd keeps session holds of seats only, not of pools: hold units with a TTL and extend it"}
	}
	f := fieldsOf(target)
	resp, cn, err := c.callOn(ctx, op, &pb.Request{Method: &pb.Request_Hold{Hold: &pb.HoldRequest{
		Namespace: namespace, Partition: partition, Ids: f.ids, Units: f.units, TtlMs: ttlMs(ttl),
		Segment: o.segment.wire(), Session: o.session,
	}}}, o.wait)
	if err != nil {
		return nil, err
	}
	r := resp.GetHold()
	if r == nil {
		return nil, malformed(op, resp)
	}
	h := newHold(c, namespace, partition, target, o.segment, r.GetToken())
	h.Fence = r.GetFence()
	h.TTL = time.Duration(r.GetTtlMs()) * time.Millisecond
	h.Degraded = resp.GetDegraded()
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

// Resume returns the Hold for a token received elsewhere (e.g. the checkout
// request after the seat-picking one, or a stored order), for the same
// target. Nothing is sent to the daemon; Fence and TTL are zero. Pass the
// hold's WithSegment when it was taken with one. The result is a plain
// hold: a session hold lives and dies with the connection that took it.
func (c *Client) Resume(namespace, partition string, target Target, token string, opts ...RequestOption) *Hold {
	return newHold(c, namespace, partition, target, collect(opts).segment, token)
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

// Extend sets the hold's remaining TTL to ttl from now (0: the namespace's
// default), for all its seats or pools or none, and returns the TTL applied.
// ErrNotHeld means the hold expired; ErrHeldByAnother that someone else
// holds a seat now.
func (h *Hold) Extend(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	const op = "extend"
	f := fieldsOf(h.Target)
	resp, err := h.client.call(ctx, op, &pb.Request{Method: &pb.Request_Extend{Extend: &pb.ExtendRequest{
		Namespace: h.Namespace, Partition: h.Partition, Ids: f.ids, Pools: f.pools, Token: h.tokenValue(),
		TtlMs: ttlMs(ttl), Segment: h.Segment.wire(),
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

// Release gives the hold back and returns how many it released: seats (one
// per leg with a segment), or units. Seats no longer held by this token are
// left alone and reported as ErrNotHeld or ErrHeldByAnother (with the count
// of those that were released).
func (h *Hold) Release(ctx context.Context) (int, error) {
	const op = "release"
	f := fieldsOf(h.Target)
	resp, err := h.client.call(ctx, op, &pb.Request{Method: &pb.Request_Release{Release: &pb.ReleaseRequest{
		Namespace: h.Namespace, Partition: h.Partition, Ids: f.ids, Pools: f.pools, Token: h.tokenValue(),
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
	_, err := h.Release(context.Background())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed), IsNotHeld(err), IsHeldByAnother(err), IsConfirmed(err):
		h.st.finish()
		return nil
	}
	return err
}

// Confirm turns the hold into a sale recorded in PostgreSQL: a claim per
// seat, or exactly the units held. It is safe to retry with the same
// IdempotencyKey when the outcome is unknown (ErrUnavailable,
// ErrDeadlineExceeded): a confirm that already committed answers again with
// Replayed set.
//
// Errors to expect: ErrConflict (PostgreSQL refused: someone else claimed a
// seat, or a pool's capacity is reached; nothing was sold), ErrHoldLost (the
// hold expired or was taken over), ErrStale, ErrIdempotencyMismatch (key
// reused for a different request), ErrInvalidArgument (units: not exactly
// those held), ErrFailedPrecondition (namespace not confirmable).
func (h *Hold) Confirm(ctx context.Context, opts ConfirmOptions) (*ConfirmResult, error) {
	const op = "confirm"
	f := fieldsOf(h.Target)
	resp, err := h.client.call(ctx, op, &pb.Request{Method: &pb.Request_Confirm{Confirm: &pb.ConfirmRequest{
		Namespace: h.Namespace, Partition: h.Partition, Ids: f.ids, Units: f.units, Token: h.tokenValue(),
		IdempotencyKey: opts.IdempotencyKey, Reference: opts.Reference, Payload: opts.Payload,
		Segment: h.Segment.wire(),
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetConfirm()
	if r == nil {
		return nil, malformed(op, resp)
	}
	h.st.finish()
	return confirmResult(r), nil
}

// Status reports the hold's seats (Resources, Owned set for those this hold
// still owns) or pools (Pools, with Owned and TTL for this hold's units).
// Diagnostic only.
func (h *Hold) Status(ctx context.Context) (*StatusResult, error) {
	return h.client.status(ctx, h.Namespace, h.Partition, h.Target, h.tokenValue(), h.Segment)
}
