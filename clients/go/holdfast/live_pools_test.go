package holdfast

// Pools (docs/pools.md) against the real daemon: the test stack's `ga`
// namespace (kind "pools", confirmable; it exists when the stack has
// PostgreSQL).

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

const poolNS = "ga"

// skipIfNoPools skips when the stack has no pools namespace (no PostgreSQL).
func skipIfNoPools(t *testing.T, err error) {
	t.Helper()
	switch CodeOf(err) {
	case CodeNotFound, CodeUnimplemented, CodeFailedPrecondition:
		t.Skipf("no pools namespace %q on this stack: %v", poolNS, err)
	}
}

func poolState(t *testing.T, c *Client, part, pool string) PoolStatus {
	t.Helper()
	st, err := c.Status(ctxT(t, 5*time.Second), poolNS, part, Units{pool: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pools) != 1 || st.Pools[0].Pool != pool || st.Resources != nil {
		t.Fatalf("pool status: %+v", st)
	}
	return st.Pools[0]
}

// poolsWith sets the capacities and returns a client and a fresh partition.
func poolsWith(t *testing.T, caps map[string]uint64) (*Client, string) {
	t.Helper()
	c := liveClient(t)
	part := partitionFor(t)
	for pool, n := range caps {
		got, err := c.Admin().SetCapacity(ctxT(t, 10*time.Second), poolNS, part, pool, n)
		skipIfNoPools(t, err)
		if err != nil {
			t.Fatal(err)
		}
		if *got != (PoolCapacity{Pool: pool, Capacity: n}) {
			t.Fatalf("SetCapacity %s %d: %+v", pool, n, got)
		}
	}
	return c, part
}

func TestLivePoolsCapacity(t *testing.T) {
	c, part := poolsWith(t, map[string]uint64{"adult": 5000, "child": 500})
	ctx := ctxT(t, 10*time.Second)
	capy, err := c.GetCapacity(ctx, poolNS, part, "adult", "child", "user-17")
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolCapacity{{Pool: "adult", Capacity: 5000}, {Pool: "child", Capacity: 500},
		{Pool: "user-17", Capacity: 0, PartitionDefault: true}}
	if capy.Default != 0 || !reflect.DeepEqual(capy.Pools, want) {
		t.Fatalf("capacity: %+v", capy)
	}
	// The partition's default: every pool without a capacity of its own.
	def, err := c.Admin().SetDefaultCapacity(ctx, poolNS, part, 1)
	if err != nil {
		t.Fatal(err)
	}
	if def.Capacity != 1 {
		t.Fatalf("default: %+v", def)
	}
	capy, err = c.GetCapacity(ctx, poolNS, part, "user-17")
	if err != nil {
		t.Fatal(err)
	}
	if capy.Default != 1 || len(capy.Pools) != 1 || capy.Pools[0] != (PoolCapacity{Pool: "user-17", Capacity: 1, PartitionDefault: true}) {
		t.Fatalf("with a default: %+v", capy)
	}
	// Raised and lowered at will while nothing is sold.
	if got, err := c.Admin().SetCapacity(ctx, poolNS, part, "adult", 4995); err != nil || got.Capacity != 4995 {
		t.Fatalf("lower: %+v %v", got, err)
	}
	if _, err := c.Admin().SetCapacity(ctx, poolNS, part, "bad pool", 1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad pool name: want ErrInvalidArgument, got %v", err)
	}
}

func TestLivePoolsAllOrNothingAndStatus(t *testing.T) {
	c, part := poolsWith(t, map[string]uint64{"adult": 10, "child": 1})
	other := liveClient(t)
	ctx := ctxT(t, 10*time.Second)

	kid, err := other.Hold(ctx, poolNS, part, Units{"child": 1}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The last child unit is held by another: nothing is taken, not even
	// the adults' units.
	_, err = c.Hold(ctx, poolNS, part, Units{"adult": 2, "child": 1}, time.Minute)
	if !errors.Is(err, ErrHeldByAnother) || ResourceOf(err) != "child" {
		t.Fatalf("want ErrHeldByAnother naming child, got %v", err)
	}
	if st := poolState(t, c, part, "adult"); st.Held != 0 || st.Free != 10 {
		t.Fatalf("adult after a refused hold: %+v", st)
	}
	if _, err := kid.Release(ctx); err != nil {
		t.Fatal(err)
	}

	h, err := c.Hold(ctx, poolNS, part, Units{"adult": 2, "child": 1}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Fence == 0 || h.TTL != time.Minute || h.Token() == "" {
		t.Fatalf("pool hold: %v", h)
	}
	st, err := h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pools) != 2 {
		t.Fatalf("status: %+v", st)
	}
	a, k := st.Pools[0], st.Pools[1]
	if a.Pool != "adult" || a.Capacity != 10 || a.Sold != 0 || a.Held != 2 || a.Free != 8 || a.Owned != 2 ||
		a.TTL <= 0 || a.TTL > time.Minute {
		t.Fatalf("adult: %+v", a)
	}
	if k.Pool != "child" || k.Held != 1 || k.Free != 0 || k.Owned != 1 {
		t.Fatalf("child: %+v", k)
	}
	if ttl, err := h.Extend(ctx, 2*time.Minute); err != nil || ttl != 2*time.Minute {
		t.Fatalf("extend: %v %v", ttl, err)
	}
	if n, err := h.Release(ctx); err != nil || n != 3 {
		t.Fatalf("release: %d units, %v", n, err)
	}
	if st := poolState(t, c, part, "adult"); st.Held != 0 || st.Free != 10 || st.Owned != 0 {
		t.Fatalf("adult after release: %+v", st)
	}
	if _, err := h.Extend(ctx, 0); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend after release: want ErrNotHeld, got %v", err)
	}
	// Ids in a pools namespace are refused.
	if _, err := c.Hold(ctx, poolNS, part, Seats{"E7"}, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("ids in a pools namespace: want ErrInvalidArgument, got %v", err)
	}
}

func TestLivePoolsConfirmReplaySoldOutCancel(t *testing.T) {
	c, part := poolsWith(t, map[string]uint64{"adult": 3, "child": 1})
	ctx := ctxT(t, 20*time.Second)
	units := Units{"adult": 2, "child": 1}
	order := "order-" + part

	h, err := c.Hold(ctx, poolNS, part, units, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Confirm names exactly the units held.
	wrong := c.Resume(poolNS, part, Units{"adult": 1, "child": 1}, h.Token())
	if _, err := wrong.Confirm(ctx, ConfirmOptions{IdempotencyKey: order + ":wrong", Reference: order}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("confirm of other units: want ErrInvalidArgument, got %v", err)
	}
	opts := ConfirmOptions{IdempotencyKey: order + ":confirm", Reference: order}
	conf, err := h.Confirm(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if conf.Replayed || conf.Fence != h.Fence || !reflect.DeepEqual(conf.Units, units) || conf.ConfirmedAt.IsZero() {
		t.Fatalf("confirmation: %+v", conf)
	}
	// A retry with the same key replays the answer and sells nothing more.
	again, err := h.Confirm(ctx, opts)
	if err != nil || !again.Replayed || again.Fence != conf.Fence || !reflect.DeepEqual(again.Units, units) {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if st := poolState(t, c, part, "adult"); st.Sold != 2 || st.Held != 0 || st.Free != 1 {
		t.Fatalf("adult after confirm: %+v", st)
	}
	if err := h.Close(); err != nil { // confirmed: nothing to give back
		t.Fatal(err)
	}
	if capy, err := c.GetCapacity(ctx, poolNS, part, "adult", "child"); err != nil || capy.Pools[0].Sold != 2 || capy.Pools[1].Sold != 1 {
		t.Fatalf("PostgreSQL's count: %+v %v", capy, err)
	}

	// Sold out: fewer units left unsold than asked.
	if _, err := c.Hold(ctx, poolNS, part, Units{"child": 1}, 0); !errors.Is(err, ErrConfirmed) || ResourceOf(err) != "child" {
		t.Fatalf("sold-out child: want ErrConfirmed naming child, got %v", err)
	}
	if _, err := c.Hold(ctx, poolNS, part, Units{"adult": 2}, 0); !errors.Is(err, ErrConfirmed) {
		t.Fatalf("2 adults with 1 unsold: want ErrConfirmed, got %v", err)
	}
	// Never below what is sold.
	_, err = c.Admin().SetCapacity(ctx, poolNS, part, "adult", 1)
	var he *Error
	if !errors.Is(err, ErrFailedPrecondition) || !errors.As(err, &he) || he.Field != "capacity" || he.ResourceID != "adult" {
		t.Fatalf("capacity below sold: want ErrFailedPrecondition (capacity, adult), got %v", err)
	}

	// Cancel gives back units sold under the reference, all or none.
	refund := CancelOptions{IdempotencyKey: order + ":refund-1", Reference: order}
	res, err := c.Cancel(ctx, poolNS, part, Units{"adult": 1}, refund)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cancelled != 1 || res.Replayed || !reflect.DeepEqual(res.Units, Units{"adult": 1}) {
		t.Fatalf("cancel: %+v", res)
	}
	if res, err := c.Cancel(ctx, poolNS, part, Units{"adult": 1}, refund); err != nil || !res.Replayed || res.Cancelled != 1 {
		t.Fatalf("cancel replay: %+v %v", res, err)
	}
	_, err = c.Cancel(ctx, poolNS, part, Units{"adult": 5}, CancelOptions{IdempotencyKey: order + ":refund-2", Reference: order})
	if !errors.Is(err, ErrNotFound) || ResourceOf(err) != "adult" {
		t.Fatalf("cancel of more than was sold: want ErrNotFound naming adult, got %v", err)
	}
	if st := poolState(t, c, part, "adult"); st.Sold != 1 || st.Free != 2 {
		t.Fatalf("adult after cancel: %+v", st)
	}
	// The unit given back can be held and sold again.
	h2, err := c.Hold(ctx, poolNS, part, Units{"adult": 2}, 0)
	if err != nil {
		t.Fatalf("hold after cancel: %v", err)
	}
	if _, err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLivePoolConfirmAfterReleaseIsHoldLost(t *testing.T) {
	c, part := poolsWith(t, map[string]uint64{"coupons": 30})
	ctx := ctxT(t, 10*time.Second)
	h, err := c.Hold(ctx, poolNS, part, Units{"coupons": 1}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Confirm(ctx, ConfirmOptions{IdempotencyKey: "lost-" + part}); !errors.Is(err, ErrHoldLost) {
		t.Fatalf("confirm of a released pool hold: want ErrHoldLost, got %v", err)
	}
}
