// Package holdfast is the Go client for holdfastd, the sidecar that gives
// applications expiring holds on scarce resources (seats, stock units,
// critical sections) with Redis as the arbiter and PostgreSQL as the system
// of record.
//
// One Client holds one Unix-socket connection to the daemon and multiplexes
// any number of concurrent calls over it: each request carries an id, the
// calling goroutine that reads the connection (whichever call is waiting,
// in turn; no reader goroutine unless session holds are kept) matches
// responses to callers, and answers may arrive in any order. Frames of
// concurrent calls are written together. Every call takes a context.Context; its deadline is sent to the
// daemon as the request's timeout and is also enforced locally, so a call
// never outlives its context. Calls without a deadline get the client's
// default timeout.
//
// When the daemon restarts, calls in flight fail with CodeUnavailable
// ("outcome unknown") and the next call dials a fresh connection, waiting for
// the daemon to come back until the call's deadline.
//
// Every operation takes a Target: Seats{"E7", "E8"} (ids of one partition)
// or Units{"adult": 2, "child": 1} (units of its pools, a namespace of kind
// "pools"). Hold returns the one hold type, *Hold, for both; Resume rebuilds
// one from a token received elsewhere; Cancel and Status take a Target too;
// Admin holds the operator's calls (SetCapacity, SetDefaultCapacity). The
// names are the same in every holdfast client (protos/contract/surface.json).
//
// Failures are *Error values carrying the daemon's result Code:
//
//	h, err := c.Hold(ctx, "seat", "run-2026-12-01-KTX101", holdfast.Seats{"E7", "E8", "E9"}, time.Minute)
//	switch {
//	case errors.Is(err, holdfast.ErrHeldByAnother):
//		// someone else has one of the seats; holdfast.ResourceOf(err) says which
//	case err != nil:
//		return err
//	}
//	defer h.Close() // releases it unless it was confirmed or released
//
// In a namespace that sells by leg (max_legs > 0), pass WithSegment(from, to)
// to Hold, Status and Resume (CancelOptions.Segment to Cancel); the Hold
// keeps its Segment for Extend, Release, Confirm, Status and Close.
//
// WithSession makes a session hold of seats: the daemon renews it while the
// connection lives and releases it when the connection closes; Hold.Done,
// Hold.Lost and WithOnLost report one that is lost (the daemon's
// unsolicited session events, or the connection's end). WithWait(d) waits
// in line up to d for seats or units another token holds.
//
// A call's W3C traceparent comes from its context: WithTraceParent sets one,
// and WithTraceParentFunc(otelhf.TraceParent) (module
// github.com/holdfast/holdfast/clients/go/otelhf) takes the OpenTelemetry
// span's, so the daemon's log and PostgreSQL name the caller's trace.
//
// Tokens are secrets: a Hold never prints its token (String, GoString and
// slog all redact it); use Hold.Token only to hand the hold to another
// process that resumes it with Client.Resume.
package holdfast

//go:generate ../regen.sh
