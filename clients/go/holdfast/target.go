package holdfast

// Targets (protos/contract/surface.json): every operation takes what it acts
// on as one value, Seats or Units, so seats and units of pools share one
// method family (Hold, Cancel, Status, Resume) and one Hold type.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// Target is what a call acts on: Seats of one partition, or Units of its
// pools. Only those two implement it.
type Target interface {
	fmt.Stringer
	fields() targetFields // the request fields; unexported: the set is closed
	clone() Target        // a Hold keeps its own copy
}

// targetFields are a target as request fields: ids for seats; for units the
// counts (Hold, Confirm, Cancel) and the pool names (Extend, Release, Status).
type targetFields struct {
	ids   []string
	units []*pb.PoolTake
	pools []string
}

// fieldsOf is t.fields(), with no fields for a nil Target (the daemon then
// refuses the request as empty).
func fieldsOf(t Target) targetFields {
	if t == nil {
		return targetFields{}
	}
	return t.fields()
}

// Seats are seat ids of one partition ([A-Za-z0-9._-], 1-128 bytes each,
// no duplicates), held all or nothing: Seats{"E7", "E8"}, or Seats(ids).
// In a namespace that sells by leg, the segment goes with the call:
// WithSegment(from, to), or CancelOptions.Segment.
type Seats []string

func (s Seats) fields() targetFields { return targetFields{ids: s} }
func (s Seats) clone() Target        { return slices.Clone(s) }

// String shows the ids, "E7,E8".
func (s Seats) String() string { return strings.Join(s, ",") }

// Units are counts of units per pool of one partition (a namespace of kind
// "pools"), held all or nothing: Units{"adult": 2, "child": 1}. Pool names
// are like ids; a count is 1..1,000,000. Status reads only the names, so
// Units{"adult": 0} asks about a pool. Pools go on the wire in name order.
type Units map[string]uint32

func (u Units) names() []string { return slices.Sorted(maps.Keys(u)) }

func (u Units) fields() targetFields {
	names := u.names()
	takes := make([]*pb.PoolTake, 0, len(names))
	for _, p := range names {
		takes = append(takes, &pb.PoolTake{Pool: p, Count: u[p]})
	}
	return targetFields{units: takes, pools: names}
}

func (u Units) clone() Target { return maps.Clone(u) }

// String shows "pool=count" in name order, "adult=2,child=1".
func (u Units) String() string {
	parts := make([]string, 0, len(u))
	for _, p := range u.names() {
		parts = append(parts, fmt.Sprintf("%s=%d", p, u[p]))
	}
	return strings.Join(parts, ",")
}

// unitsFromWire is an answer's units (nil when there are none).
func unitsFromWire(takes []*pb.PoolTake) Units {
	if len(takes) == 0 {
		return nil
	}
	out := make(Units, len(takes))
	for _, t := range takes {
		out[t.GetPool()] += t.GetCount()
	}
	return out
}
