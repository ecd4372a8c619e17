// Package otelhf connects the holdfast Go client to OpenTelemetry: with
//
//	c := holdfast.New("", holdfast.WithTraceParentFunc(otelhf.TraceParent))
//
// every call carries the W3C traceparent of the span in its context, so
// holdfastd logs the trace id beside the correlation id and passes it to
// PostgreSQL with Confirm and Cancel. It is a module of its own, so the
// holdfast client itself has no OpenTelemetry dependency: only applications
// that import this package get one.
package otelhf

import (
	"context"

	holdfast "github.com/holdfast/holdfast/clients/go/holdfast"
	"go.opentelemetry.io/otel/propagation"
)

// TraceParent returns the W3C traceparent of the span context in ctx
// ("00-<trace-id>-<span-id>-<flags>"), or "" when ctx has no valid one. It
// uses the W3C propagator itself, whatever propagators the application
// registered globally: holdfastd reads traceparent.
func TraceParent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// Option is holdfast.WithTraceParentFunc(TraceParent).
func Option() holdfast.Option {
	return holdfast.WithTraceParentFunc(TraceParent)
}
