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

// Claim is one claimed seat (or leg) in a ConfirmResult, as PostgreSQL
// recorded it.
type Claim struct {
	ResourceID  string
	Fence       uint64
	Reference   string
	ConfirmedAt time.Time
}

// ConfirmResult is the answer of a Confirm.
type ConfirmResult struct {
	Fence uint64
	// Replayed is true when this answer repeats an earlier identical
	// confirm with the same idempotency key (a retry that found it done).
	Replayed bool
	// Claims are the seats claimed (one per leg with a segment); nil for
	// units.
	Claims []Claim
	// Units are the units sold; nil for seats.
	Units Units
	// ConfirmedAt is when the sale was committed (for seats, the claims'
	// time; zero if the daemon did not say).
	ConfirmedAt time.Time
}

func unixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{} // the daemon did not say
	}
	return time.UnixMilli(ms)
}

func confirmResult(r *pb.ConfirmResponse) *ConfirmResult {
	out := &ConfirmResult{Fence: r.GetFence(), Replayed: r.GetReplayed(), Units: unitsFromWire(r.GetUnits()),
		ConfirmedAt: unixMilli(r.GetConfirmedAtUnixMs())}
	for _, cl := range r.GetClaims() {
		out.Claims = append(out.Claims, Claim{
			ResourceID:  cl.GetResourceId(),
			Fence:       cl.GetFence(),
			Reference:   cl.GetReference(),
			ConfirmedAt: unixMilli(cl.GetConfirmedAtUnixMs()),
		})
	}
	// The wire's confirmed_at is the pools' (docs/pools.md); seats carry it
	// per claim, all of one transaction.
	if out.ConfirmedAt.IsZero() && len(out.Claims) > 0 {
		out.ConfirmedAt = out.Claims[0].ConfirmedAt
	}
	return out
}

// CancelOptions are the caller's side of a Cancel. A Cancel is all or
// nothing and scoped to one order: every seat (or unit) must be sold under
// Reference, else nothing is cancelled (ErrNotFound or ErrConflict naming
// the seat or pool).
type CancelOptions struct {
	IdempotencyKey string // required; reuse it when retrying
	Reference      string // required: the reference the sale was confirmed with
	// Segment cancels only legs FromStop .. ToStop-1 of each seat, in a
	// namespace with max_legs (required there); zero: no segment.
	Segment Segment
}

// CancelResult is the answer of a Cancel.
type CancelResult struct {
	// Cancelled counts the seats cancelled (one per leg), or the units
	// given back.
	Cancelled int
	Replayed  bool
	// Units are the units given back; nil for seats.
	Units Units
}

// Cancel gives back seats or units sold under opts.Reference (the order it
// refunds), all or nothing, so they can be held and sold again. Errors to
// expect: ErrNotFound (not sold under the reference; for units, fewer than
// asked: nothing was cancelled; ResourceOf names the seat or pool),
// ErrIdempotencyMismatch. Retry with the same IdempotencyKey when the
// outcome is unknown.
func (c *Client) Cancel(ctx context.Context, namespace, partition string, target Target, opts CancelOptions) (*CancelResult, error) {
	const op = "cancel"
	f := fieldsOf(target)
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Cancel{Cancel: &pb.CancelRequest{
		Namespace: namespace, Partition: partition, Ids: f.ids, Units: f.units,
		IdempotencyKey: opts.IdempotencyKey, Reference: opts.Reference, Segment: opts.Segment.wire(),
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetCancel()
	if r == nil {
		return nil, malformed(op, resp)
	}
	return &CancelResult{Cancelled: int(r.GetCancelled()), Replayed: r.GetReplayed(), Units: unitsFromWire(r.GetUnits())}, nil
}

// ResourceState is a seat's state in a Status answer.
type ResourceState = pb.ResourceState

// Resource states.
const (
	StateFree      = pb.ResourceState_RESOURCE_STATE_FREE
	StateHeld      = pb.ResourceState_RESOURCE_STATE_HELD
	StateConfirmed = pb.ResourceState_RESOURCE_STATE_CONFIRMED
)

// ResourceStatus is one seat (or leg, "<id>@<leg>") in a StatusResult.
type ResourceStatus struct {
	ID    string
	State ResourceState
	// TTL is the remaining time to live; 0 when free, negative when the key
	// has no expiry.
	TTL time.Duration
	// Owned is true when the hold asked about (Hold.Status) owns it.
	Owned bool
}

// PoolStatus is one pool in a StatusResult, as Redis sees it now (capacity
// and sold mirrored from PostgreSQL).
type PoolStatus struct {
	Pool     string
	Capacity uint64
	Sold     uint64
	// Held is the units in live holds.
	Held uint64
	// Free is Capacity - Sold - Held (0 when that is negative).
	Free uint64
	// Owned is the units the asking hold holds (Hold.Status).
	Owned uint32
	// TTL is what is left of the asking hold's TTL (0 when it holds none).
	TTL time.Duration
}

// StatusResult is the answer of a Status: one ResourceStatus per seat (or
// leg) of a Seats target, one PoolStatus per pool of a Units target.
type StatusResult struct {
	Resources []ResourceStatus
	Pools     []PoolStatus
}

// Status reports the state of a target's seats (with WithSegment: of each
// leg, "<id>@<leg>") or pools (capacity, sold, held and free units; only the
// names of a Units count). It is a diagnostic: the answer may be stale by
// the time it arrives and grants nothing. For what a token owns, use
// Hold.Status (on c.Resume(...) for a token received elsewhere).
func (c *Client) Status(ctx context.Context, namespace, partition string, target Target, opts ...RequestOption) (*StatusResult, error) {
	return c.status(ctx, namespace, partition, target, "", collect(opts).segment)
}

func (c *Client) status(ctx context.Context, namespace, partition string, target Target, token string, seg Segment) (*StatusResult, error) {
	const op = "status"
	f := fieldsOf(target)
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Status{Status: &pb.StatusRequest{
		Namespace: namespace, Partition: partition, Ids: f.ids, Pools: f.pools, Token: token, Segment: seg.wire(),
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetStatus()
	if r == nil {
		return nil, malformed(op, resp)
	}
	out := &StatusResult{}
	for _, rs := range r.GetResources() {
		ttl := time.Duration(rs.GetTtlMs()) * time.Millisecond
		if rs.GetTtlMs() < 0 {
			ttl = -1
		}
		out.Resources = append(out.Resources, ResourceStatus{ID: rs.GetId(), State: rs.GetState(), TTL: ttl, Owned: rs.GetOwned()})
	}
	for _, p := range r.GetPools() {
		out.Pools = append(out.Pools, PoolStatus{Pool: p.GetPool(), Capacity: p.GetCapacity(), Sold: p.GetSold(),
			Held: p.GetHeld(), Free: p.GetFree(), Owned: p.GetOwned(),
			TTL: time.Duration(p.GetTtlMs()) * time.Millisecond})
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
