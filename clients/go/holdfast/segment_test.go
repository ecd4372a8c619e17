package holdfast

// Journey segments on the wire, against the scripted peer: every call
// carries the segment it was given, a Hold carries its own to Extend,
// Release, Confirm, Status and Close, and calls without one leave the field
// unset. The daemon's side is in live_segments_test.go.

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

type segmentPeer struct {
	*peer
	mu   sync.Mutex
	seen []string // "method from->to" or "method -"
}

func newSegmentPeer(t *testing.T) *segmentPeer {
	sp := &segmentPeer{}
	sp.peer = newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		resp := &pb.Response{Id: req.GetId(), Code: CodeOK}
		var method string
		var seg *pb.Segment
		switch m := req.GetMethod().(type) {
		case *pb.Request_Hold:
			method, seg = "hold", m.Hold.GetSegment()
			resp.Result = &pb.Response_Hold{Hold: &pb.HoldResponse{Token: "1.fake", Fence: 1, TtlMs: 60000}}
		case *pb.Request_Extend:
			method, seg = "extend", m.Extend.GetSegment()
			resp.Result = &pb.Response_Extend{Extend: &pb.ExtendResponse{TtlMs: 1000}}
		case *pb.Request_Release:
			method, seg = "release", m.Release.GetSegment()
			resp.Result = &pb.Response_Release{Release: &pb.ReleaseResponse{Released: 1}}
		case *pb.Request_Confirm:
			method, seg = "confirm", m.Confirm.GetSegment()
			resp.Result = &pb.Response_Confirm{Confirm: &pb.ConfirmResponse{Fence: 1}}
		case *pb.Request_Cancel:
			method, seg = "cancel", m.Cancel.GetSegment()
			resp.Result = &pb.Response_Cancel{Cancel: &pb.CancelResponse{Cancelled: 1}}
		case *pb.Request_Status:
			method, seg = "status", m.Status.GetSegment()
			resp.Result = &pb.Response_Status{Status: &pb.StatusResponse{}}
		}
		s := method + " -"
		if seg != nil {
			s = fmt.Sprintf("%s %d->%d", method, seg.GetFromStop(), seg.GetToStop())
		}
		sp.mu.Lock()
		sp.seen = append(sp.seen, s)
		sp.mu.Unlock()
		p.send(nc, resp)
	})
	return sp
}

func (sp *segmentPeer) calls() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return append([]string(nil), sp.seen...)
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestSegmentTravelsWithEveryCallAndTheHold(t *testing.T) {
	sp := newSegmentPeer(t)
	c := New(sp.path)
	defer c.Close()
	ctx := context.Background()

	h := must[*Hold](t)(c.Hold(ctx, "train", "ktx", Seats{"E7"}, 0, WithSegment(0, 2)))
	if h.Segment != (Segment{FromStop: 0, ToStop: 2}) {
		t.Fatalf("hold remembers %+v", h.Segment)
	}
	if s := h.String(); !strings.Contains(s, "segment=0->2") || strings.Contains(s, "1.fake") {
		t.Fatalf("String: %q", s)
	}
	must[any](t)(h.Extend(ctx, 0))
	must[any](t)(h.Status(ctx))
	if err := h.Close(); err != nil { // scope exit: release on the same legs
		t.Fatal(err)
	}
	h2 := must[*Hold](t)(c.Hold(ctx, "train", "ktx", Seats{"E7"}, 0, WithSegment(2, 4)))
	must[any](t)(h2.Confirm(ctx, ConfirmOptions{IdempotencyKey: "k-1", Reference: "order-1"}))
	must[any](t)(c.Cancel(ctx, "train", "ktx", Seats{"E7"},
		CancelOptions{IdempotencyKey: "r-1", Reference: "order-1", Segment: Segment{FromStop: 2, ToStop: 4}}))
	must[any](t)(c.Status(ctx, "train", "ktx", Seats{"E7"}, WithSegment(0, 4)))
	resumed := c.Resume("train", "ktx", Seats{"E7"}, "1.fake", WithSegment(5, 6))
	must[any](t)(resumed.Release(ctx))

	want := []string{"hold 0->2", "extend 0->2", "status 0->2", "release 0->2",
		"hold 2->4", "confirm 2->4", "cancel 2->4", "status 0->4", "release 5->6"}
	if got := sp.calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("segments on the wire:\n got %v\nwant %v", got, want)
	}
}

func TestNoSegmentLeavesTheFieldUnset(t *testing.T) {
	sp := newSegmentPeer(t)
	c := New(sp.path)
	defer c.Close()
	ctx := context.Background()

	h := must[*Hold](t)(c.Hold(ctx, "seat", "run-1", Seats{"E7"}, 0))
	if !h.Segment.IsZero() || strings.Contains(h.String(), "segment") {
		t.Fatalf("hold without a segment: %v", h)
	}
	must[any](t)(h.Extend(ctx, 0))
	must[any](t)(h.Confirm(ctx, ConfirmOptions{IdempotencyKey: "k-2"}))
	must[any](t)(c.Cancel(ctx, "seat", "run-1", Seats{"E7"}, CancelOptions{IdempotencyKey: "r-2", Reference: "k-2"}))
	must[any](t)(c.Status(ctx, "seat", "run-1", Seats{"E7"}))
	want := []string{"hold -", "extend -", "confirm -", "cancel -", "status -"}
	if got := sp.calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSegmentResourceIDs(t *testing.T) {
	s := Segment{FromStop: 1, ToStop: 3}
	if got := s.ResourceIDs([]string{"E7", "E8"}); !reflect.DeepEqual(got, []string{"E7@1", "E7@2", "E8@1", "E8@2"}) {
		t.Fatalf("ResourceIDs: %v", got)
	}
	if got := (Segment{}).ResourceIDs([]string{"E7"}); !reflect.DeepEqual(got, []string{"E7"}) {
		t.Fatalf("zero Segment ResourceIDs: %v", got)
	}
	if s.String() != "1->3" || (Segment{}).String() != "" || !(Segment{}).IsZero() || s.IsZero() {
		t.Fatal("String/IsZero")
	}
}
