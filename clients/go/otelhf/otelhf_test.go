package otelhf

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	holdfast "github.com/holdfast/holdfast/clients/go/holdfast"
	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
)

func spanContext(t *testing.T, traceID, spanID string, sampled bool) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		t.Fatal(err)
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})
}

func TestTraceParent(t *testing.T) {
	if got := TraceParent(context.Background()); got != "" {
		t.Fatalf("no span: %q", got)
	}
	ctx := trace.ContextWithSpanContext(context.Background(),
		spanContext(t, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true))
	if got, want := TraceParent(ctx), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; got != want {
		t.Fatalf("sampled: %q, want %q", got, want)
	}
	ctx = trace.ContextWithRemoteSpanContext(context.Background(),
		spanContext(t, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", false))
	if got, want := TraceParent(ctx), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"; got != want {
		t.Fatalf("not sampled: %q, want %q", got, want)
	}
}

// fakeDaemon answers every request OK and records it.
type fakeDaemon struct {
	path string
	mu   sync.Mutex
	reqs []*pb.Request
}

func startFake(t *testing.T) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{path: filepath.Join(t.TempDir(), "hf.sock")}
	ln, err := net.Listen("unix", d.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go d.serve(nc)
		}
	}()
	return d
}

func (d *fakeDaemon) serve(nc net.Conn) {
	defer nc.Close()
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(nc, body); err != nil {
			return
		}
		req := &pb.Request{}
		if err := proto.Unmarshal(body, req); err != nil {
			return
		}
		d.mu.Lock()
		d.reqs = append(d.reqs, req)
		d.mu.Unlock()
		out, _ := proto.Marshal(&pb.Response{Id: req.GetId(), CorrelationId: req.GetCorrelationId(),
			Code: pb.Code_CODE_OK, Result: &pb.Response_Health{Health: &pb.HealthResponse{Live: true}}})
		binary.BigEndian.PutUint32(hdr[:], uint32(len(out)))
		if _, err := nc.Write(append(hdr[:], out...)); err != nil {
			return
		}
	}
}

func TestRequestsCarryTheSpanOfTheirContext(t *testing.T) {
	d := startFake(t)
	c := holdfast.New(d.path, Option())
	defer c.Close()
	base, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	span := trace.ContextWithSpanContext(base,
		spanContext(t, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true))
	explicit := "00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01"
	for _, ctx := range []context.Context{
		span,                                     // the span's
		base,                                     // none
		holdfast.WithTraceParent(span, explicit), // the call's own wins
		holdfast.WithTraceParent(span, ""),       // none, even in a span
	} {
		if _, err := c.Health(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", explicit, ""}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, r := range d.reqs {
		if r.GetTraceparent() != want[i] {
			t.Errorf("request %d: traceparent %q, want %q", i, r.GetTraceparent(), want[i])
		}
	}
	if len(d.reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(d.reqs), len(want))
	}
}
