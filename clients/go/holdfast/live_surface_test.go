package holdfast

// The one surface against the real daemon: seats, units of pools and seats
// on a journey segment go through the same calls, hold -> extend -> status
// -> resume from the token on a second Client -> confirm -> cancel.

import (
	"reflect"
	"testing"
	"time"
)

// ownedIn counts what the asking token owns in a status: seats (legs) or
// units.
func ownedIn(st *StatusResult) int {
	n := 0
	for _, r := range st.Resources {
		if r.Owned {
			n++
		}
	}
	for _, p := range st.Pools {
		n += int(p.Owned)
	}
	return n
}

// soldIn counts the seats (legs) or units sold in a status.
func soldIn(st *StatusResult) int {
	n := 0
	for _, r := range st.Resources {
		if r.State == StateConfirmed {
			n++
		}
	}
	for _, p := range st.Pools {
		n += int(p.Sold)
	}
	return n
}

func TestLiveOneSurface(t *testing.T) {
	cases := []struct {
		name   string
		ns     string
		target Target
		seg    Segment
		caps   map[string]uint64 // pools: their capacity, set first
		n      int               // seats, legs or units the hold covers
	}{
		{"seats", testNamespace(), Seats{"E7", "E8"}, Segment{}, nil, 2},
		{"units", poolNS, Units{"adult": 2, "child": 1}, Segment{}, map[string]uint64{"adult": 10, "child": 5}, 3},
		{"segment", segmentNamespace, Seats{"E7"}, Segment{FromStop: 1, ToStop: 3}, nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, other := liveClient(t), liveClient(t)
			part := partitionFor(t)
			ctx := ctxT(t, 20*time.Second)
			var opts []RequestOption
			if !tc.seg.IsZero() {
				opts = append(opts, WithSegment(tc.seg.FromStop, tc.seg.ToStop))
			}
			for pool, n := range tc.caps {
				_, err := c.Admin().SetCapacity(ctx, tc.ns, part, pool, n)
				skipIfNoPools(t, err)
				if err != nil {
					t.Fatal(err)
				}
			}

			h, err := c.Hold(ctx, tc.ns, part, tc.target, time.Minute, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := h.Close(); err != nil { // sold through the resumed hold: nothing to give back
					t.Error(err)
				}
			}()
			if !reflect.DeepEqual(h.Target, tc.target) || h.Segment != tc.seg || h.Fence == 0 || h.TTL != time.Minute {
				t.Fatalf("hold: %v", h)
			}
			if ttl, err := h.Extend(ctx, 2*time.Minute); err != nil || ttl != 2*time.Minute {
				t.Fatalf("extend: %v %v", ttl, err)
			}
			st, err := h.Status(ctx)
			if err != nil || ownedIn(st) != tc.n {
				t.Fatalf("status: %+v %v", st, err)
			}

			// Another process with the token: the same target, no call.
			r := other.Resume(tc.ns, part, tc.target, h.Token(), opts...)
			if st, err := r.Status(ctx); err != nil || ownedIn(st) != tc.n {
				t.Fatalf("status of the resumed hold: %+v %v", st, err)
			}
			order := "order-" + part
			conf, err := r.Confirm(ctx, ConfirmOptions{IdempotencyKey: order + ":confirm", Reference: order})
			skipIfConfirmUnavailable(t, err)
			if err != nil {
				t.Fatal(err)
			}
			sold := len(conf.Claims)
			for _, n := range conf.Units {
				sold += int(n)
			}
			if sold != tc.n || conf.Fence != h.Fence || conf.Replayed || conf.ConfirmedAt.IsZero() {
				t.Fatalf("confirm: %+v", conf)
			}
			if st, err := c.Status(ctx, tc.ns, part, tc.target, opts...); err != nil || soldIn(st) != tc.n || ownedIn(st) != 0 {
				t.Fatalf("status after confirm: %+v %v", st, err)
			}

			res, err := c.Cancel(ctx, tc.ns, part, tc.target, CancelOptions{IdempotencyKey: order + ":refund", Reference: order, Segment: tc.seg})
			if err != nil {
				t.Fatal(err)
			}
			if _, units := tc.target.(Units); res.Cancelled != tc.n || res.Replayed || (units && !reflect.DeepEqual(res.Units, tc.target)) {
				t.Fatalf("cancel: %+v", res)
			}
			if st, err := c.Status(ctx, tc.ns, part, tc.target, opts...); err != nil || soldIn(st) != 0 {
				t.Fatalf("status after cancel: %+v %v", st, err)
			}
		})
	}
}
