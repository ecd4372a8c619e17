package holdfast

// The names of the client before the one surface (protos/contract/
// surface.json), kept for one release. Each is listed, with its
// replacement, under "deprecated" in protos/contract/surface/go.json, which
// surface_test.go checks both ways. Delete this file in the next release.

import (
	"context"
	"time"
)

// PoolHold was the hold of units of pools.
//
// Deprecated: use Hold, the one hold type for Seats and Units.
type PoolHold = Hold

// Confirmation was the answer of a Confirm of seats.
//
// Deprecated: use ConfirmResult.
type Confirmation = ConfirmResult

// PoolConfirmation was the answer of a Confirm of units.
//
// Deprecated: use ConfirmResult.
type PoolConfirmation = ConfirmResult

// Capacity was the answer of GetCapacity.
//
// Deprecated: use Capacities.
type Capacity = Capacities

// HoldUnits holds units of pools.
//
// Deprecated: use Client.Hold with a Units target.
func (c *Client) HoldUnits(ctx context.Context, namespace, partition string, units Units, ttl time.Duration, opts ...RequestOption) (*Hold, error) {
	return c.Hold(ctx, namespace, partition, units, ttl, opts...)
}

// HoldFromToken resumes a hold of seats from its token.
//
// Deprecated: use Client.Resume with a Seats target.
func (c *Client) HoldFromToken(namespace, partition string, ids []string, token string, opts ...RequestOption) *Hold {
	return c.Resume(namespace, partition, Seats(ids), token, opts...)
}

// PoolHoldFromToken resumes a hold of units from its token.
//
// Deprecated: use Client.Resume with a Units target.
func (c *Client) PoolHoldFromToken(namespace, partition string, units Units, token string) *Hold {
	return c.Resume(namespace, partition, units, token)
}

// CancelUnits gives back units sold under opts.Reference.
//
// Deprecated: use Client.Cancel with a Units target.
func (c *Client) CancelUnits(ctx context.Context, namespace, partition string, units Units, opts CancelOptions) (*CancelResult, error) {
	return c.Cancel(ctx, namespace, partition, units, opts)
}

// PoolStatus reports pools of a partition.
//
// Deprecated: use Client.Status with a Units target; its answer's Pools.
func (c *Client) PoolStatus(ctx context.Context, namespace, partition string, pools []string) ([]PoolStatus, error) {
	u := make(Units, len(pools))
	for _, p := range pools {
		u[p] = 0
	}
	st, err := c.Status(ctx, namespace, partition, u)
	if err != nil {
		return nil, err
	}
	return st.Pools, nil
}

// SetCapacity sets a pool's capacity.
//
// Deprecated: use Admin.SetCapacity (c.Admin().SetCapacity): an operator's act.
func (c *Client) SetCapacity(ctx context.Context, namespace, partition, pool string, capacity uint64) (*PoolCapacity, error) {
	return c.Admin().SetCapacity(ctx, namespace, partition, pool, capacity)
}

// SetDefaultCapacity sets the partition's default capacity.
//
// Deprecated: use Admin.SetDefaultCapacity (c.Admin().SetDefaultCapacity):
// an operator's act.
func (c *Client) SetDefaultCapacity(ctx context.Context, namespace, partition string, capacity uint64) (*PoolCapacity, error) {
	return c.Admin().SetDefaultCapacity(ctx, namespace, partition, capacity)
}

// Extend extends h.
//
// Deprecated: use Hold.Extend.
func (c *Client) Extend(ctx context.Context, h *Hold, ttl time.Duration) (time.Duration, error) {
	return h.Extend(ctx, ttl)
}

// Release releases h.
//
// Deprecated: use Hold.Release.
func (c *Client) Release(ctx context.Context, h *Hold) (int, error) {
	return h.Release(ctx)
}

// Confirm confirms h.
//
// Deprecated: use Hold.Confirm.
func (c *Client) Confirm(ctx context.Context, h *Hold, opts ConfirmOptions) (*ConfirmResult, error) {
	return h.Confirm(ctx, opts)
}
