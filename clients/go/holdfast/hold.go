package holdfast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
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

	client *Client
	token  secret
	done   *atomic.Bool // released or confirmed through this Hold; behind a pointer so Hold values copy
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
	return fmt.Sprintf("hold %s/%s[%s]%s fence=%d ttl=%s", h.Namespace, h.Partition,
		strings.Join(h.IDs, ","), seg, h.Fence, h.TTL)
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
	return slog.GroupValue(attrs...)
}

func ttlMs(ttl time.Duration) uint32 {
	if ttl <= 0 {
		return 0
	}
	return timeoutMs(ttl)
}

// Hold takes an expiring hold on ids of one partition, all or nothing.
// ttl 0 means the namespace's default TTL. WithSegment(from, to) holds legs
// from .. to-1 of each id, in a namespace with max_legs (and only there).
//
// Errors to expect: ErrHeldByAnother (ResourceOf names the resource),
// ErrConfirmed (already sold), ErrInvalidArgument, ErrNotFound (namespace),
// ErrUnavailable / ErrDeadlineExceeded (nothing granted that you know of;
// an unknown grant expires with its TTL).
func (c *Client) Hold(ctx context.Context, namespace, partition string, ids []string, ttl time.Duration, opts ...RequestOption) (*Hold, error) {
	const op = "hold"
	o := collect(opts)
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Hold{Hold: &pb.HoldRequest{
		Namespace: namespace, Partition: partition, Ids: ids, TtlMs: ttlMs(ttl), Segment: o.segment.wire(),
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetHold()
	if r == nil {
		return nil, malformed(op, resp)
	}
	return &Hold{
		Namespace: namespace,
		Partition: partition,
		IDs:       append([]string(nil), ids...),
		Segment:   o.segment,
		Fence:     r.GetFence(),
		TTL:       time.Duration(r.GetTtlMs()) * time.Millisecond,
		Degraded:  resp.GetDegraded(),
		client:    c,
		token:     newSecret(r.GetToken()),
		done:      new(atomic.Bool),
	}, nil
}

// HoldFromToken rebuilds a Hold from its token, for a process that resumes
// a hold taken elsewhere (e.g. the checkout request after the seat-picking
// one). Nothing is sent to the daemon; Fence and TTL are zero. Pass the
// hold's WithSegment when it was taken with one.
func (c *Client) HoldFromToken(namespace, partition string, ids []string, token string, opts ...RequestOption) *Hold {
	return &Hold{Namespace: namespace, Partition: partition, IDs: append([]string(nil), ids...),
		Segment: collect(opts).segment, client: c, token: newSecret(token), done: new(atomic.Bool)}
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
	h.markDone()
	return n, nil
}

func (h *Hold) markDone() {
	if h.done != nil {
		h.done.Store(true)
	}
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
	if h.done != nil && h.done.Load() {
		return nil
	}
	_, err := h.client.Release(context.Background(), h)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed), IsNotHeld(err), IsHeldByAnother(err), IsConfirmed(err):
		h.markDone()
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
