package holdfast

import (
	"fmt"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// Segment is a trip along a line of stops (journey segments,
// docs/segments.md): legs FromStop .. ToStop-1, leg k running from stop k to
// stop k+1. In a namespace with max_legs > 0 every request names one, and
// answers name each leg "<id>@<leg>" ("E7@1"); other namespaces refuse one.
//
// The zero Segment means "no segment": requests leave the field unset, as
// before segments existed.
type Segment struct {
	FromStop uint32
	ToStop   uint32
}

// IsZero reports whether s is the zero Segment (no segment).
func (s Segment) IsZero() bool { return s == Segment{} }

// String shows the trip as "from->to" ("" for the zero Segment).
func (s Segment) String() string {
	if s.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d->%d", s.FromStop, s.ToStop)
}

// ResourceIDs returns the per-leg names the daemon answers with for ids:
// "E7@0", "E7@1", ... (ids unchanged for the zero Segment).
func (s Segment) ResourceIDs(ids []string) []string {
	if s.IsZero() {
		return append([]string(nil), ids...)
	}
	var out []string
	for _, id := range ids {
		for leg := s.FromStop; leg < s.ToStop; leg++ {
			out = append(out, fmt.Sprintf("%s@%d", id, leg))
		}
	}
	return out
}

// wire is the request field: nil (unset) for the zero Segment.
func (s Segment) wire() *pb.Segment {
	if s.IsZero() {
		return nil
	}
	return &pb.Segment{FromStop: s.FromStop, ToStop: s.ToStop}
}
