package holdfast

// Strings with NUL bytes against the real daemon: it refuses any string
// field holding a NUL byte (or invalid UTF-8) with INVALID_ARGUMENT naming
// the field, before anything is written. Go strings carry NUL freely (and
// NUL is valid UTF-8, so protobuf encodes it), so the refusal is the
// daemon's.

import (
	"errors"
	"testing"
	"time"
)

// invalidField fails unless err is INVALID_ARGUMENT naming field.
func invalidField(t *testing.T, err error, field string) {
	t.Helper()
	var he *Error
	if !errors.As(err, &he) || he.Code != CodeInvalidArgument || he.Field != field {
		t.Fatalf("want INVALID_ARGUMENT on %s, got %v", field, err)
	}
}

func seatState(t *testing.T, c *Client, part, id string) ResourceState {
	t.Helper()
	st, err := c.Status(ctxT(t, 5*time.Second), testNamespace(), part, Seats{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 1 || st.Resources[0].ID != id {
		t.Fatalf("status of %q: %+v", id, st)
	}
	return st.Resources[0].State
}

func TestLiveNulInAnIDIsRefusedAndTakesNothing(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	_, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"E\x007"}, 30*time.Second)
	invalidField(t, err, "ids[0]")
	_, err = c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"F1", "E\x007"}, 30*time.Second)
	invalidField(t, err, "ids[1]")
	// Not cut at the NUL ("E"), and nothing else of the request taken.
	for _, id := range []string{"E", "7", "F1"} {
		if s := seatState(t, c, part, id); s != StateFree {
			t.Fatalf("%s is %v after refused holds", id, s)
		}
	}
}

func TestLiveNulInAnIdempotencyKeyIsRefused(t *testing.T) {
	c := liveClient(t)
	part := partitionFor(t)
	h, err := c.Hold(ctxT(t, 5*time.Second), testNamespace(), part, Seats{"E"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	key := "order-" + part
	_, err = h.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: key + "\x00x", Reference: "order-1"})
	invalidField(t, err, "idempotency_key")
	// Nothing written: still held by this hold, not sold ...
	st, err := h.Status(ctxT(t, 5*time.Second))
	if err != nil || len(st.Resources) != 1 || st.Resources[0].State != StateHeld || !st.Resources[0].Owned {
		t.Fatalf("after the refused confirm: %+v %v", st, err)
	}
	// ... and the key cut at the NUL was never stored: a confirm under it is a first one.
	conf, err := h.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: key, Reference: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	if conf.Replayed || len(conf.Claims) != 1 || conf.Claims[0].ResourceID != "E" {
		t.Fatalf("confirm: %+v", conf)
	}
}

func TestLiveNulInACancelReferenceIsRefused(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"E"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: "order-" + part, Reference: "order-1"}); err != nil {
		t.Fatal(err)
	}
	refund := "refund-" + part
	_, err = c.Cancel(ctxT(t, 10*time.Second), ns, part, Seats{"E"}, CancelOptions{IdempotencyKey: refund, Reference: "order-1\x00x"})
	invalidField(t, err, "reference")
	if s := seatState(t, c, part, "E"); s != StateConfirmed {
		t.Fatalf("after the refused cancel E is %v", s)
	}
	// The refused cancel stored nothing under its key: the real one is not a replay.
	res, err := c.Cancel(ctxT(t, 10*time.Second), ns, part, Seats{"E"}, CancelOptions{IdempotencyKey: refund, Reference: "order-1"})
	if err != nil || res.Cancelled != 1 || res.Replayed {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	if s := seatState(t, c, part, "E"); s != StateFree {
		t.Fatalf("after the cancel E is %v", s)
	}
}
