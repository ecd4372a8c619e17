package holdfast

// Pools (docs/pools.md): a namespace of kind "pools" sells a number of
// interchangeable units per pool instead of named seats. A hold takes
// `count` units of one or more pools of a partition, all or nothing; Confirm
// sells exactly the units held; Cancel gives sold units back; the capacity
// lives in PostgreSQL (SetCapacity, GetCapacity).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// Units is a number of units of one pool (PoolTake on the wire). Pool names
// are like ids: [A-Za-z0-9._-], 1-128 bytes; Count is 1..1,000,000.
type Units struct {
	Pool  string
	Count uint32
}

// String shows "pool=count".
func (u Units) String() string { return fmt.Sprintf("%s=%d", u.Pool, u.Count) }

func unitsWire(units []Units) []*pb.PoolTake {
	out := make([]*pb.PoolTake, 0, len(units))
	for _, u := range units {
		out = append(out, &pb.PoolTake{Pool: u.Pool, Count: u.Count})
	}
	return out
}

func unitsFromWire(units []*pb.PoolTake) []Units {
	if len(units) == 0 {
		return nil
	}
	out := make([]Units, 0, len(units))
	for _, u := range units {
		out = append(out, Units{Pool: u.GetPool(), Count: u.GetCount()})
	}
	return out
}

func poolNames(units []Units) []string {
	out := make([]string, 0, len(units))
	for _, u := range units {
		out = append(out, u.Pool)
	}
	return out
}

func joinUnits(units []Units) string {
	parts := make([]string, 0, len(units))
	for _, u := range units {
		parts = append(parts, u.String())
	}
	return strings.Join(parts, ",")
}

// PoolHold is a granted hold on units of one or more pools of one partition
// (a namespace of kind "pools"). Its fields never change; it is safe for
// concurrent use. Like a Hold it never prints its token, and defer
// h.Close() gives the units back on every path that does not confirm.
type PoolHold struct {
	Namespace string
	Partition string
	Units     []Units
	// Fence is the hold's fencing number within its partition.
	Fence uint64
	// TTL is the time to live applied at grant (0 for a resumed hold).
	TTL time.Duration
	// Degraded: the namespace's best_effort policy answered without Redis;
	// nothing is held.
	Degraded bool
	client   *Client
	token    secret
	st       *holdState
}

// Token returns the hold's secret ownership proof. Keep it out of logs.
func (h *PoolHold) Token() string {
	if h.token == nil {
		return ""
	}
	return h.token.v
}

// String describes the hold without its token.
func (h PoolHold) String() string {
	return fmt.Sprintf("pool hold %s/%s[%s] fence=%d ttl=%s", h.Namespace, h.Partition,
		joinUnits(h.Units), h.Fence, h.TTL)
}

// GoString keeps %#v from dumping the token.
func (h PoolHold) GoString() string { return "&holdfast.PoolHold{" + h.String() + "}" }

// LogValue keeps slog from dumping the token.
func (h PoolHold) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("namespace", h.Namespace),
		slog.String("partition", h.Partition),
		slog.String("units", joinUnits(h.Units)),
		slog.Uint64("fence", h.Fence),
		slog.Duration("ttl", h.TTL),
	}
	return slog.GroupValue(attrs...)
}

// HoldUnits takes units of the pools of one partition, all or nothing, in a
// namespace of kind "pools". ttl 0 means the namespace's default TTL.
// WithWait works as for Hold, where the daemon waits in line for pools.
// WithSession is refused (ErrInvalidArgument, field "session", nothing
// sent): holdfastd keeps session holds of seats only, and would grant a
// plain hold with the default TTL instead; take a TTL and Extend it.
//
//	h, err := c.HoldUnits(ctx, "ga", "show-2026-12-24",
//		[]holdfast.Units{{Pool: "adult", Count: 2}, {Pool: "child", Count: 1}}, 0)
//	if err != nil { ... }
//	defer h.Close()
//
// Errors to expect: ErrHeldByAnother (fewer units free than asked, the rest
// held by others: ResourceOf names the pool; try later, holds expire),
// ErrConfirmed (fewer units left unsold than asked: sold out, or no
// capacity), ErrInvalidArgument (also for ids or a seat namespace),
// ErrNotFound, ErrUnavailable / ErrDeadlineExceeded. Nothing is taken when
// any pool refuses.
func (c *Client) HoldUnits(ctx context.Context, namespace, partition string, units []Units, ttl time.Duration, opts ...RequestOption) (*PoolHold, error) {
	const op = "hold"
	o := collect(opts)
	if o.session {
		return nil, &Error{Op: op, Code: CodeInvalidArgument, Field: "session",
			Message: "holdfastd keeps session holds of seats only, not of pools: hold units with a TTL and extend it"}
	}
	resp, _, err := c.callOn(ctx, op, &pb.Request{Method: &pb.Request_Hold{Hold: &pb.HoldRequest{
		Namespace: namespace, Partition: partition, Units: unitsWire(units), TtlMs: ttlMs(ttl),
	}}}, o.wait)
	if err != nil {
		return nil, err
	}
	r := resp.GetHold()
	if r == nil {
		return nil, malformed(op, resp)
	}
	h := &PoolHold{
		Namespace: namespace,
		Partition: partition,
		Units:     append([]Units(nil), units...),
		Fence:     r.GetFence(),
		TTL:       time.Duration(r.GetTtlMs()) * time.Millisecond,
		Degraded:  resp.GetDegraded(),
		client:    c,
		token:     newSecret(r.GetToken()),
		st:        newHoldState(),
	}
	return h, nil
}

// PoolHoldFromToken rebuilds a PoolHold from its token, for a process that
// resumes a hold taken elsewhere. Nothing is sent; Fence and TTL are zero.
func (c *Client) PoolHoldFromToken(namespace, partition string, units []Units, token string) *PoolHold {
	return &PoolHold{Namespace: namespace, Partition: partition, Units: append([]Units(nil), units...),
		client: c, token: newSecret(token), st: newHoldState()}
}

// Extend sets the hold's remaining TTL to ttl from now (0: the namespace's
// default) and returns the TTL applied, for all its pools or none.
// ErrNotHeld: the hold expired.
func (h *PoolHold) Extend(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	const op = "extend"
	resp, err := h.client.call(ctx, op, &pb.Request{Method: &pb.Request_Extend{Extend: &pb.ExtendRequest{
		Namespace: h.Namespace, Partition: h.Partition, Pools: poolNames(h.Units), Token: h.Token(),
		TtlMs: ttlMs(ttl),
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

// Release gives the hold's units back and returns how many units it gave
// back. ErrNotHeld: the hold had expired.
func (h *PoolHold) Release(ctx context.Context) (int, error) {
	const op = "release"
	resp, err := h.client.call(ctx, op, &pb.Request{Method: &pb.Request_Release{Release: &pb.ReleaseRequest{
		Namespace: h.Namespace, Partition: h.Partition, Pools: poolNames(h.Units), Token: h.Token(),
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

// Close leaves the hold's scope as Hold.Close does: nothing after a
// successful Confirm or Release through h; otherwise a release, where an
// expired, taken-over or sold hold and a closed client are not errors.
func (h *PoolHold) Close() error {
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

// PoolConfirmation is the result of a PoolHold's Confirm.
type PoolConfirmation struct {
	Fence uint64
	// Units are the units sold.
	Units []Units
	// ConfirmedAt is when the sale was committed (zero if not said).
	ConfirmedAt time.Time
	// Replayed is true when this answer repeats an earlier identical
	// confirm with the same idempotency key.
	Replayed bool
}

// Confirm sells exactly the units the hold holds, for good, in PostgreSQL.
// Retry with the same IdempotencyKey after ErrUnavailable or
// ErrDeadlineExceeded: a confirm that committed answers again with Replayed
// set.
//
// Errors to expect: ErrConflict (PostgreSQL refused: the capacity is
// reached, or the hold was already confirmed; release the hold), ErrHoldLost
// (the token holds none of these units any more), ErrIdempotencyMismatch,
// ErrInvalidArgument (not exactly the units held), ErrFailedPrecondition
// (namespace not confirmable).
func (h *PoolHold) Confirm(ctx context.Context, opts ConfirmOptions) (*PoolConfirmation, error) {
	const op = "confirm"
	resp, err := h.client.call(ctx, op, &pb.Request{Method: &pb.Request_Confirm{Confirm: &pb.ConfirmRequest{
		Namespace: h.Namespace, Partition: h.Partition, Units: unitsWire(h.Units), Token: h.Token(),
		IdempotencyKey: opts.IdempotencyKey, Reference: opts.Reference, Payload: opts.Payload,
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetConfirm()
	if r == nil {
		return nil, malformed(op, resp)
	}
	h.st.finish()
	out := &PoolConfirmation{Fence: r.GetFence(), Units: unitsFromWire(r.GetUnits()), Replayed: r.GetReplayed()}
	if ms := r.GetConfirmedAtUnixMs(); ms != 0 {
		out.ConfirmedAt = time.UnixMilli(ms)
	}
	return out, nil
}

// Status reports the hold's pools, with Owned and TTL for this hold's units.
// Diagnostic only.
func (h *PoolHold) Status(ctx context.Context) ([]PoolStatus, error) {
	return h.client.poolStatus(ctx, h.Namespace, h.Partition, poolNames(h.Units), h.Token())
}

// CancelUnits gives back units sold under opts.Reference (the order it
// refunds), all pools or none; opts.Segment must be zero. Errors to expect:
// ErrNotFound (fewer units than asked are sold under the reference: nothing
// was cancelled; ResourceOf names the pool), ErrIdempotencyMismatch. Retry
// with the same IdempotencyKey when the outcome is unknown.
func (c *Client) CancelUnits(ctx context.Context, namespace, partition string, units []Units, opts CancelOptions) (*CancelResult, error) {
	const op = "cancel"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Cancel{Cancel: &pb.CancelRequest{
		Namespace: namespace, Partition: partition, Units: unitsWire(units),
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

// PoolStatus is one pool as Redis sees it now (capacity and sold mirrored
// from PostgreSQL).
type PoolStatus struct {
	Pool     string
	Capacity uint64
	Sold     uint64
	// Held is the units in live holds.
	Held uint64
	// Free is Capacity - Sold - Held (0 when that is negative).
	Free uint64
	// Owned is the units the asking hold holds (PoolHold.Status).
	Owned uint32
	// TTL is what is left of the asking hold's TTL (0 when it holds none).
	TTL time.Duration
}

// PoolStatus reports pools of a partition: capacity, sold, held and free
// units. It is a diagnostic (the mirror in Redis), never permission.
func (c *Client) PoolStatus(ctx context.Context, namespace, partition string, pools []string) ([]PoolStatus, error) {
	return c.poolStatus(ctx, namespace, partition, pools, "")
}

func (c *Client) poolStatus(ctx context.Context, namespace, partition string, pools []string, token string) ([]PoolStatus, error) {
	const op = "status"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_Status{Status: &pb.StatusRequest{
		Namespace: namespace, Partition: partition, Pools: pools, Token: token,
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetStatus()
	if r == nil {
		return nil, malformed(op, resp)
	}
	out := make([]PoolStatus, 0, len(r.GetPools()))
	for _, p := range r.GetPools() {
		out = append(out, PoolStatus{Pool: p.GetPool(), Capacity: p.GetCapacity(), Sold: p.GetSold(),
			Held: p.GetHeld(), Free: p.GetFree(), Owned: p.GetOwned(),
			TTL: time.Duration(p.GetTtlMs()) * time.Millisecond})
	}
	return out, nil
}

// PoolCapacity is a pool as PostgreSQL has it.
type PoolCapacity struct {
	// Pool is empty for the partition's default.
	Pool string
	// Capacity is the capacity in effect (its own, or the default).
	Capacity uint64
	Sold     uint64
	// PartitionDefault is true when the pool has no capacity of its own and
	// follows the partition's default.
	PartitionDefault bool
}

func capacityFromWire(p *pb.PoolCapacity) PoolCapacity {
	return PoolCapacity{Pool: p.GetPool(), Capacity: p.GetCapacity(), Sold: p.GetSold(),
		PartitionDefault: p.GetPartitionDefault()}
}

// SetCapacity sets how many units a pool may ever have sold at once (sold
// included), 0..10^12, in PostgreSQL, and returns the pool as it now is.
// ErrFailedPrecondition (Field "capacity"): below what is sold; nothing was
// changed.
func (c *Client) SetCapacity(ctx context.Context, namespace, partition, pool string, capacity uint64) (*PoolCapacity, error) {
	return c.setCapacity(ctx, &pb.SetCapacityRequest{Namespace: namespace, Partition: partition,
		Pool: pool, Capacity: capacity})
}

// SetDefaultCapacity sets the partition's default capacity: that of every
// pool of the partition that has none of its own (e.g. 1 for per-user
// pools, docs/pools.md). ErrFailedPrecondition names a pool following it
// that sold more.
func (c *Client) SetDefaultCapacity(ctx context.Context, namespace, partition string, capacity uint64) (*PoolCapacity, error) {
	return c.setCapacity(ctx, &pb.SetCapacityRequest{Namespace: namespace, Partition: partition,
		Capacity: capacity, PartitionDefault: true})
}

func (c *Client) setCapacity(ctx context.Context, req *pb.SetCapacityRequest) (*PoolCapacity, error) {
	const op = "set_capacity"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_SetCapacity{SetCapacity: req}})
	if err != nil {
		return nil, err
	}
	r := resp.GetSetCapacity()
	if r == nil {
		return nil, malformed(op, resp)
	}
	p := capacityFromWire(r.GetPool())
	return &p, nil
}

// Capacity is a GetCapacity answer, as PostgreSQL has it.
type Capacity struct {
	Pools []PoolCapacity
	// Default is the partition's default capacity (0 when none was set).
	Default uint64
}

// GetCapacity reads the capacity in effect and the units sold of pools (0 ..
// max_ids of them) and the partition's default from PostgreSQL, the system
// of record; it also refreshes the daemon's mirror in Redis.
func (c *Client) GetCapacity(ctx context.Context, namespace, partition string, pools ...string) (*Capacity, error) {
	const op = "get_capacity"
	resp, err := c.call(ctx, op, &pb.Request{Method: &pb.Request_GetCapacity{GetCapacity: &pb.GetCapacityRequest{
		Namespace: namespace, Partition: partition, Pools: pools,
	}}})
	if err != nil {
		return nil, err
	}
	r := resp.GetGetCapacity()
	if r == nil {
		return nil, malformed(op, resp)
	}
	out := &Capacity{Default: r.GetDefaultCapacity()}
	for _, p := range r.GetPools() {
		out.Pools = append(out.Pools, capacityFromWire(p))
	}
	return out, nil
}
