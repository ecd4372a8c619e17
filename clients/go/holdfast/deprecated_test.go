package holdfast

// The names before the one surface (deprecated.go) still work, for one
// release, against the scripted peers of segment_test.go and pools_test.go.

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestSeatDeprecatedAliases(t *testing.T) {
	sp := newSegmentPeer(t)
	c := New(sp.path)
	defer c.Close()
	ctx := context.Background()

	h := must[*Hold](t)(c.Hold(ctx, "train", "ktx", Seats{"E7", "E8"}, 0, WithSegment(0, 2)))
	if !reflect.DeepEqual(h.IDs, []string{"E7", "E8"}) {
		t.Fatalf("Hold.IDs = %v", h.IDs)
	}
	must[any](t)(c.Extend(ctx, h, time.Minute))
	var conf *Confirmation = must[*ConfirmResult](t)(c.Confirm(ctx, h, ConfirmOptions{IdempotencyKey: "k-1", Reference: "order-1"}))
	if conf.Fence != 1 {
		t.Fatalf("Client.Confirm: %+v", conf)
	}
	resumed := c.HoldFromToken("train", "ktx", []string{"E7"}, "1.fake", WithSegment(5, 6))
	if !reflect.DeepEqual(resumed.Target, Seats{"E7"}) || !reflect.DeepEqual(resumed.IDs, []string{"E7"}) {
		t.Fatalf("HoldFromToken: %v", resumed)
	}
	must[any](t)(c.Release(ctx, resumed))
	want := []string{"hold 0->2", "extend 0->2", "confirm 0->2", "release 5->6"}
	if got := sp.calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("on the wire:\n got %v\nwant %v", got, want)
	}
}

func TestPoolDeprecatedAliases(t *testing.T) {
	c, lastReq, _ := poolPeer(t)
	ctx := context.Background()
	units := Units{"adult": 2, "child": 1}

	var h *PoolHold
	h, err := c.HoldUnits(ctx, "ga", "show", units, time.Minute)
	if err != nil || !protoEqualTakes(lastReq().GetHold().GetUnits(), wantTakes) {
		t.Fatalf("HoldUnits: %v %v", err, lastReq())
	}
	if _, err := c.Extend(ctx, h, time.Minute); err != nil || !reflect.DeepEqual(lastReq().GetExtend().GetPools(), wantPools) {
		t.Fatalf("Client.Extend: %v %v", err, lastReq())
	}
	var conf *PoolConfirmation
	conf, err = c.Confirm(ctx, h, ConfirmOptions{IdempotencyKey: "k", Reference: "r"})
	if err != nil || !reflect.DeepEqual(conf.Units, units) {
		t.Fatalf("Client.Confirm: %+v %v", conf, err)
	}
	resumed := c.PoolHoldFromToken("ga", "show", units, h.Token())
	if n, err := c.Release(ctx, resumed); err != nil || n != 3 || lastReq().GetRelease().GetToken() != poolToken {
		t.Fatalf("PoolHoldFromToken + Client.Release: %d %v", n, err)
	}
	if res, err := c.CancelUnits(ctx, "ga", "show", Units{"adult": 1}, CancelOptions{IdempotencyKey: "c", Reference: "r"}); err != nil ||
		!reflect.DeepEqual(res.Units, Units{"adult": 1}) {
		t.Fatalf("CancelUnits: %+v %v", res, err)
	}
	if st, err := c.PoolStatus(ctx, "ga", "show", []string{"adult", "child"}); err != nil || len(st) != 2 ||
		!reflect.DeepEqual(lastReq().GetStatus().GetPools(), wantPools) {
		t.Fatalf("PoolStatus: %+v %v", st, err)
	}
	if pc, err := c.SetCapacity(ctx, "ga", "show", "adult", 10); err != nil || pc.Capacity != 10 {
		t.Fatalf("Client.SetCapacity: %+v %v", pc, err)
	}
	if pc, err := c.SetDefaultCapacity(ctx, "ga", "show", 1); err != nil || !pc.PartitionDefault ||
		!lastReq().GetSetCapacity().GetPartitionDefault() {
		t.Fatalf("Client.SetDefaultCapacity: %+v %v", pc, err)
	}
	var capy *Capacity
	if capy, err = c.GetCapacity(ctx, "ga", "show", "adult"); err != nil || capy.Default != 1 {
		t.Fatalf("GetCapacity: %+v %v", capy, err)
	}
}
