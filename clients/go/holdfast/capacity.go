package holdfast

// Capacity of pools (docs/pools.md): a namespace of kind "pools" sells a
// number of interchangeable units per pool, up to a capacity that lives in
// PostgreSQL. Reading it is an application's call (GetCapacity); setting it
// is an operator's (Admin).

import (
	"context"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

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

// Capacities is a GetCapacity answer, as PostgreSQL has it.
type Capacities struct {
	Pools []PoolCapacity
	// Default is the partition's default capacity (0 when none was set).
	Default uint64
}

// GetCapacity reads the capacity in effect and the units sold of pools (0 ..
// max_ids of them) and the partition's default from PostgreSQL, the system
// of record; it also refreshes the daemon's mirror in Redis.
func (c *Client) GetCapacity(ctx context.Context, namespace, partition string, pools ...string) (*Capacities, error) {
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
	out := &Capacities{Default: r.GetDefaultCapacity()}
	for _, p := range r.GetPools() {
		out.Pools = append(out.Pools, capacityFromWire(p))
	}
	return out, nil
}

// Admin is the operator's surface of a Client: calls that change what may
// be sold. They are apart from the application's calls because the daemon
// will refuse them to application clients.
type Admin struct{ c *Client }

// Admin returns the operator's calls, over c's connection.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

// SetCapacity sets how many units a pool may ever have sold at once (sold
// included), 0..10^12, in PostgreSQL, and returns the pool as it now is.
// ErrFailedPrecondition (Field "capacity"): below what is sold; nothing was
// changed.
func (a *Admin) SetCapacity(ctx context.Context, namespace, partition, pool string, capacity uint64) (*PoolCapacity, error) {
	return a.setCapacity(ctx, &pb.SetCapacityRequest{Namespace: namespace, Partition: partition,
		Pool: pool, Capacity: capacity})
}

// SetDefaultCapacity sets the partition's default capacity: that of every
// pool of the partition that has none of its own (e.g. 1 for per-user
// pools, docs/pools.md). ErrFailedPrecondition names a pool following it
// that sold more.
func (a *Admin) SetDefaultCapacity(ctx context.Context, namespace, partition string, capacity uint64) (*PoolCapacity, error) {
	return a.setCapacity(ctx, &pb.SetCapacityRequest{Namespace: namespace, Partition: partition,
		Capacity: capacity, PartitionDefault: true})
}

func (a *Admin) setCapacity(ctx context.Context, req *pb.SetCapacityRequest) (*PoolCapacity, error) {
	const op = "set_capacity"
	resp, err := a.c.call(ctx, op, &pb.Request{Method: &pb.Request_SetCapacity{SetCapacity: req}})
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
