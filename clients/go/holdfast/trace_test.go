package holdfast

// Trace context (contract.json "trace_context"): the context's own
// traceparent, else the client's hook (otelhf.TraceParent in applications;
// a stand-in here, so the core module needs no OpenTelemetry), else none.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

type traceCase struct {
	Explicit *string `json:"explicit"`
	Otel     *struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
		Sampled bool   `json:"sampled"`
	} `json:"otel"`
	TraceParent string `json:"traceparent"`
}

func loadTraceContract(t *testing.T) (field string, cases []traceCase) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "protos", "contract", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		TraceContext struct {
			Field                  string      `json:"field"`
			ExplicitEmptyMeansNone bool        `json:"explicit_empty_means_none"`
			Cases                  []traceCase `json:"cases"`
		} `json:"trace_context"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("contract.json: %v", err)
	}
	if len(c.TraceContext.Cases) == 0 || !c.TraceContext.ExplicitEmptyMeansNone {
		t.Fatal("contract.json: trace_context missing")
	}
	return c.TraceContext.Field, c.TraceContext.Cases
}

// A stand-in for an OpenTelemetry span in the context, and the hook that
// formats it the way otelhf.TraceParent does.
type fakeSpanKey struct{}

func fakeSpanHook(ctx context.Context) string {
	s, _ := ctx.Value(fakeSpanKey{}).(string)
	return s
}

// recorder answers every request OK and keeps them.
type recorder struct {
	mu   sync.Mutex
	reqs []*pb.Request
}

func (r *recorder) handle(p *peer, nc net.Conn, req *pb.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	resp := okHealth(req)
	switch req.GetMethod().(type) {
	case *pb.Request_Hold:
		resp.Result = &pb.Response_Hold{Hold: &pb.HoldResponse{Token: "1.fake", Fence: 1, TtlMs: 60000}}
	case *pb.Request_Release:
		resp.Result = &pb.Response_Release{Release: &pb.ReleaseResponse{Released: 1}}
	case *pb.Request_Extend:
		resp.Result = &pb.Response_Extend{Extend: &pb.ExtendResponse{TtlMs: 1000}}
	}
	p.send(nc, resp)
}

func (r *recorder) traceparents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.reqs))
	for i, q := range r.reqs {
		out[i] = q.GetTraceparent()
	}
	return out
}

func TestTraceContextContractCases(t *testing.T) {
	field, cases := loadTraceContract(t)
	if field != "traceparent" {
		t.Fatalf("field %q", field)
	}
	rec := &recorder{}
	p := newPeer(t, rec.handle)
	c := New(p.path, WithTraceParentFunc(fakeSpanHook))
	defer c.Close()
	for i, tc := range cases {
		ctx := context.Background()
		if tc.Otel != nil {
			flags := "00"
			if tc.Otel.Sampled {
				flags = "01"
			}
			ctx = context.WithValue(ctx, fakeSpanKey{}, fmt.Sprintf("00-%s-%s-%s", tc.Otel.TraceID, tc.Otel.SpanID, flags))
		}
		if tc.Explicit != nil {
			ctx = WithTraceParent(ctx, *tc.Explicit)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := c.Health(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := rec.traceparents()[i]; got != tc.TraceParent {
			t.Errorf("case %d: traceparent %q, want %q", i, got, tc.TraceParent)
		}
	}
}

func TestNoHookNoTraceParent(t *testing.T) {
	rec := &recorder{}
	p := newPeer(t, rec.handle)
	c := New(p.path) // no WithTraceParentFunc: the client as before
	defer c.Close()
	ctx := context.WithValue(context.Background(), fakeSpanKey{}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if _, err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	tp := "00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01"
	if _, err := c.Health(WithTraceParent(ctx, tp)); err != nil {
		t.Fatal(err)
	}
	if got := rec.traceparents(); len(got) != 2 || got[0] != "" || got[1] != tp {
		t.Fatalf("traceparents %q", got)
	}
	if got, ok := TraceParent(WithTraceParent(context.Background(), "")); got != "" || !ok {
		t.Fatalf("TraceParent of an explicit none: %q %v", got, ok)
	}
	if _, ok := TraceParent(context.Background()); ok {
		t.Fatal("TraceParent of a bare context is set")
	}
}

func TestHoldCallsTakeTheirOwnContext(t *testing.T) {
	rec := &recorder{}
	p := newPeer(t, rec.handle)
	c := New(p.path, WithTraceParentFunc(fakeSpanHook))
	defer c.Close()
	span := func(id string) context.Context {
		return context.WithValue(context.Background(), fakeSpanKey{}, "00-0af7651916cd43dd8448eb211c80319c-"+id+"-01")
	}
	h, err := c.Hold(span("00000000000000a1"), "seat", "p", Seats{"E7"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Extend(span("00000000000000b2"), time.Second); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil { // no context: none
		t.Fatal(err)
	}
	want := []string{
		"00-0af7651916cd43dd8448eb211c80319c-00000000000000a1-01",
		"00-0af7651916cd43dd8448eb211c80319c-00000000000000b2-01",
		"",
	}
	got := rec.traceparents()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("traceparents %q, want %q", got, want)
	}
}
