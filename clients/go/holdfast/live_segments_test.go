package holdfast

// Journey segments against the real daemon (docs/segments.md): the test
// stack's `train` namespace (tools/devstack.sh) has max_legs = 8, so every
// request there names a segment and acts on legs FromStop .. ToStop-1;
// answers name a leg "<id>@<leg>".

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"
)

const segmentNamespace = "train"

// legStates maps each leg of seat in from..to to its state.
func legStates(t *testing.T, c *Client, part, seat string, from, to uint32) map[string]ResourceState {
	t.Helper()
	st, err := c.Status(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{seat}, WithSegment(from, to))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ResourceState{}
	for _, r := range st.Resources {
		out[r.ID] = r.State
	}
	return out
}

func claimIDs(conf *ConfirmResult) []string {
	var ids []string
	for _, cl := range conf.Claims {
		ids = append(ids, cl.ResourceID)
	}
	sort.Strings(ids)
	return ids
}

// buy holds seat on from..to and confirms it under reference.
func buy(t *testing.T, c *Client, part, seat string, from, to uint32, reference string) *ConfirmResult {
	t.Helper()
	h, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{seat}, 30*time.Second, WithSegment(from, to))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	conf, err := h.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: reference + "-" + part, Reference: reference})
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

func TestLiveSegmentsAdjacentTripsSellToTwoTravellers(t *testing.T) {
	c := liveClient(t)
	part := partitionFor(t)

	// Seoul (0) -> Daejeon (2) for Alice, Daejeon (2) -> Busan (4) for Bob.
	alice, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"E7"}, 30*time.Second, WithSegment(0, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	if alice.Segment != (Segment{FromStop: 0, ToStop: 2}) {
		t.Fatalf("hold remembers %+v", alice.Segment)
	}
	st, err := alice.Status(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 2 || st.Resources[0].ID != "E7@0" || st.Resources[1].ID != "E7@1" || !st.Resources[0].Owned || !st.Resources[1].Owned {
		t.Fatalf("alice's legs: %+v", st)
	}
	if ttl, err := alice.Extend(ctxT(t, 5*time.Second), time.Minute); err != nil || ttl != time.Minute {
		t.Fatalf("extend: %v %v", ttl, err)
	}
	bob, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"E7"}, 30*time.Second, WithSegment(2, 4))
	if err != nil {
		t.Fatalf("adjacent trip refused: %v", err)
	}
	defer bob.Close()

	a, err := alice.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: "alice-" + part, Reference: "order-a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bob.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: "bob-" + part, Reference: "order-b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(a); !reflect.DeepEqual(got, []string{"E7@0", "E7@1"}) {
		t.Fatalf("alice's claims: %v", got)
	}
	if got := claimIDs(b); !reflect.DeepEqual(got, []string{"E7@2", "E7@3"}) {
		t.Fatalf("bob's claims: %v", got)
	}
	want := map[string]ResourceState{"E7@0": StateConfirmed, "E7@1": StateConfirmed,
		"E7@2": StateConfirmed, "E7@3": StateConfirmed, "E7@4": StateFree, "E7@5": StateFree}
	if got := legStates(t, c, part, "E7", 0, 6); !reflect.DeepEqual(got, want) {
		t.Fatalf("legs: %v", got)
	}
}

func TestLiveSegmentsOverlapIsRefusedNamingTheLeg(t *testing.T) {
	c, other := liveClient(t), liveClient(t)
	part := partitionFor(t)

	carol, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"E7"}, 30*time.Second, WithSegment(0, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	// 1 -> 3 shares leg 1 with Carol's hold.
	_, err = other.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"E7"}, 30*time.Second, WithSegment(1, 3))
	var he *Error
	if !errors.As(err, &he) || he.Code != CodeHeldByAnother || he.ResourceID != "E7@1" {
		t.Fatalf("overlap with a hold: want HELD_BY_ANOTHER on E7@1, got %v", err)
	}
	// All or nothing: leg 2 stays free.
	if got := legStates(t, c, part, "E7", 2, 3); got["E7@2"] != StateFree {
		t.Fatalf("leg 2 after a refused hold: %v", got)
	}
	if _, err := carol.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: "carol-" + part, Reference: "order-c"}); err != nil {
		t.Fatal(err)
	}
	_, err = other.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"E7"}, 30*time.Second, WithSegment(1, 3))
	if !IsConfirmed(err) || ResourceOf(err) != "E7@1" {
		t.Fatalf("overlap with a sale: want CONFIRMED on E7@1, got %v", err)
	}
	dave, err := other.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"E7"}, 30*time.Second, WithSegment(2, 3))
	if err != nil {
		t.Fatalf("the trip after hers: %v", err)
	}
	if err := dave.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLiveSegmentsCancelFreesOnlyItsLegs(t *testing.T) {
	c := liveClient(t)
	part := partitionFor(t)
	first := buy(t, c, part, "B2", 0, 2, "order-1")
	buy(t, c, part, "B2", 2, 4, "order-2")

	// The reference is the one the confirm was made with.
	res, err := c.Cancel(ctxT(t, 10*time.Second), segmentNamespace, part, Seats{"B2"}, CancelOptions{
		IdempotencyKey: "refund-" + part, Reference: first.Claims[0].Reference, Segment: Segment{FromStop: 0, ToStop: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cancelled != 2 || res.Replayed {
		t.Fatalf("cancel: %+v", res)
	}
	want := map[string]ResourceState{"B2@0": StateFree, "B2@1": StateFree, "B2@2": StateConfirmed, "B2@3": StateConfirmed}
	if got := legStates(t, c, part, "B2", 0, 4); !reflect.DeepEqual(got, want) {
		t.Fatalf("legs after the cancel: %v", got)
	}
	again, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"B2"}, 30*time.Second, WithSegment(0, 2))
	if err != nil {
		t.Fatalf("freed legs do not sell again: %v", err)
	}
	_ = again.Close()
	if _, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"B2"}, 30*time.Second, WithSegment(1, 3)); !IsConfirmed(err) || ResourceOf(err) != "B2@2" {
		t.Fatalf("the other order's legs: want CONFIRMED on B2@2, got %v", err)
	}
}

func TestLiveSegmentsCloseReleasesTheHoldsLegs(t *testing.T) {
	c := liveClient(t)
	part := partitionFor(t)
	h, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"C3", "C4"}, 30*time.Second, WithSegment(5, 8))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ResourceState{"C4@4": StateFree, "C4@5": StateHeld, "C4@6": StateHeld, "C4@7": StateHeld}
	if got := legStates(t, c, part, "C4", 4, 8); !reflect.DeepEqual(got, want) {
		t.Fatalf("held legs: %v", got)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, seat := range []string{"C3", "C4"} {
		for id, s := range legStates(t, c, part, seat, 5, 8) {
			if s != StateFree {
				t.Fatalf("after Close, %s is %v", id, s)
			}
		}
	}
	h2, err := c.Hold(ctxT(t, 5*time.Second), segmentNamespace, part, Seats{"C3"}, 30*time.Second, WithSegment(0, 3))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := h2.Release(ctxT(t, 5*time.Second)); err != nil || n != 3 { // one per leg
		t.Fatalf("release: n=%d err=%v", n, err)
	}
}

func TestLiveSegmentsRequiredWithLegsRefusedElsewhere(t *testing.T) {
	c := liveClient(t)
	part := partitionFor(t)
	cases := []struct {
		ns   string
		opts []RequestOption
	}{
		{segmentNamespace, nil},                                // missing where the namespace sells by leg
		{testNamespace(), []RequestOption{WithSegment(0, 1)}},  // refused where it does not
		{segmentNamespace, []RequestOption{WithSegment(3, 2)}}, // backwards
	}
	for _, tc := range cases {
		_, err := c.Hold(context.Background(), tc.ns, part, Seats{"E7"}, 30*time.Second, tc.opts...)
		var he *Error
		if !errors.As(err, &he) || he.Code != CodeInvalidArgument || he.Field != "segment" {
			t.Fatalf("%s %v: want INVALID_ARGUMENT on segment, got %v", tc.ns, tc.opts, err)
		}
	}
}
