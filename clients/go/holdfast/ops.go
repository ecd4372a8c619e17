package holdfast

import (
	"context"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// ConfirmOptions are the caller's side of a Confirm.
type ConfirmOptions struct {
	// IdempotencyKey identifies this purchase across retries (required,
	// 1-128 bytes of [A-Za-z0-9._:-]). Reuse it when retrying after
	// ErrUnavailable or ErrDeadlineExceeded; never use the token.
	IdempotencyKey string
	// Reference is stored with the claim (order id, customer id...).
	Reference string
	// Payload is stored with the claim (at most 4 KiB).
	Payload []byte
}

// Claim is one confirmed resource as PostgreSQL recorded it.
type Claim struct {
	ResourceID  string
	Fence       uint64
	Reference   string
	ConfirmedAt time.Time
}

// Confirmation is the result of a Confirm.
type Confirmation struct {
	Fence  uint64
	Claims []Claim
	// Replayed is true when this answer repeats an earlier identical
	// confirm with the same idempotency key (a retry that found it done).
	Replayed bool
}

// Confirm turns the hold into a durable claim in PostgreSQL. It is safe to
// retry with the same IdempotencyKey when the outcome is unknown
// (ErrUnavailable, ErrDeadlineExceeded): a confirm that already committed
// answers again with Replayed set.
//
// Errors to expect: ErrConflict (someone else claimed a resource: nothing
// was claimed), ErrHoldLost (the hold expired or was taken over),
// ErrStale, ErrIdempotencyMismatch (key reused for a different request),
// ErrFailedPrecondition (namespace not confirmable).
func (c *Client) Confirm(ctx context.Context, h *Hold, opts ConfirmOptions) (*Confirmation, error) {
	const op = "confirm"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Confirm{Confirm: &pb.ConfirmRequest{
		Namespace: h.Namespace, Partition: h.Partition, Ids: h.IDs, Token: h.tokenValue(),
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
	out := &Confirmation{Fence: r.GetFence(), Replayed: r.GetReplayed()}
	for _, cl := range r.GetClaims() {
		var at time.Time // zero when the daemon did not say
		if ms := cl.GetConfirmedAtUnixMs(); ms != 0 {
			at = time.UnixMilli(ms)
		}
		out.Claims = append(out.Claims, Claim{
			ResourceID:  cl.GetResourceId(),
			Fence:       cl.GetFence(),
			Reference:   cl.GetReference(),
			ConfirmedAt: at,
		})
	}
	return out, nil
}

// CancelOptions are the caller's side of a Cancel. A Cancel is all or
// nothing and scoped to one order: every id must be claimed under Reference,
// else nothing is cancelled (ErrNotFound or ErrConflict naming the id).
type CancelOptions struct {
	IdempotencyKey string // required; reuse it when retrying
	Reference      string // required: the reference the claims were confirmed with
	// Segment cancels only legs FromStop .. ToStop-1 of each id, in a
	// namespace with max_legs (required there); zero: no segment.
	Segment Segment
}

// CancelResult is the result of a Cancel.
type CancelResult struct {
	// Cancelled counts the ids cancelled; for pools (CancelUnits), the
	// units given back.
	Cancelled int
	Replayed  bool
	// Units are the units given back (CancelUnits only).
	Units []Units
}

// Cancel removes confirmed claims so the resources can be held and sold
// again.
func (c *Client) Cancel(ctx context.Context, namespace, partition string, ids []string, opts CancelOptions) (*CancelResult, error) {
	const op = "cancel"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Cancel{Cancel: &pb.CancelRequest{
		Namespace: namespace, Partition: partition, Ids: ids,
		IdempotencyKey: opts.IdempotencyKey, Reference: opts.Reference, Segment: opts.Segment.wire(),
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetCancel()
	if r == nil {
		return nil, malformed(op, resp)
	}
	return &CancelResult{Cancelled: int(r.GetCancelled()), Replayed: r.GetReplayed()}, nil
}

// ResourceState is a resource's state in a Status answer.
type ResourceState = pb.ResourceState

// Resource states.
const (
	StateFree      = pb.ResourceState_RESOURCE_STATE_FREE
	StateHeld      = pb.ResourceState_RESOURCE_STATE_HELD
	StateConfirmed = pb.ResourceState_RESOURCE_STATE_CONFIRMED
)

// ResourceStatus is one resource in a Status answer.
type ResourceStatus struct {
	ID    string
	State ResourceState
	// TTL is the remaining time to live; 0 when free, negative when the key
	// has no expiry.
	TTL time.Duration
	// Owned is true when the hold asked about (Hold.Status) owns it.
	Owned bool
}

// Status reports the state of resources (with WithSegment: of each leg,
// "<id>@<leg>"). It is a diagnostic: the answer may be stale by the time it
// arrives and grants nothing.
func (c *Client) Status(ctx context.Context, namespace, partition string, ids []string, opts ...RequestOption) ([]ResourceStatus, error) {
	return c.status(ctx, namespace, partition, ids, "", collect(opts).segment)
}

func (c *Client) status(ctx context.Context, namespace, partition string, ids []string, token string, seg Segment) ([]ResourceStatus, error) {
	const op = "status"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Status{Status: &pb.StatusRequest{
		Namespace: namespace, Partition: partition, Ids: ids, Token: token, Segment: seg.wire(),
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetStatus()
	if r == nil {
		return nil, malformed(op, resp)
	}
	out := make([]ResourceStatus, 0, len(r.GetResources()))
	for _, rs := range r.GetResources() {
		ttl := time.Duration(rs.GetTtlMs()) * time.Millisecond
		if rs.GetTtlMs() < 0 {
			ttl = -1
		}
		out = append(out, ResourceStatus{ID: rs.GetId(), State: rs.GetState(), TTL: ttl, Owned: rs.GetOwned()})
	}
	return out, nil
}

// Health is the daemon's liveness and readiness report.
type Health = pb.HealthResponse

// Health asks the daemon whether it is live and ready. Check Ready before
// sending traffic; when the daemon reports a problem as an error code and
// still includes its report, both are returned.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	const op = "health"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Health{Health: &pb.HealthRequest{}}})
	if err != nil {
		return resp.GetHealth(), err
	}
	if resp.GetHealth() == nil {
		return nil, malformed(op, resp)
	}
	return resp.GetHealth(), nil
}

// Metrics returns the daemon's counters in Prometheus text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	const op = "metrics"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Metrics{Metrics: &pb.MetricsRequest{}}})
	if err != nil {
		return "", err
	}
	if resp.GetMetrics() == nil {
		return "", malformed(op, resp)
	}
	return resp.GetMetrics().GetText(), nil
}
