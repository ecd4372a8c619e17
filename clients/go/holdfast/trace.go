package holdfast

import "context"

// W3C trace context (the client contract's "Trace context"): a request's
// traceparent is the one set on its context by WithTraceParent, else what
// the client's WithTraceParentFunc hook returns for that context, else none.
// The core module has no OpenTelemetry dependency; the separate module
// github.com/holdfast/holdfast/clients/go/otelhf supplies the hook:
//
//	c := holdfast.New("", holdfast.WithTraceParentFunc(otelhf.TraceParent))

type traceParentKey struct{}

// WithTraceParent returns a context whose calls carry tp as their W3C
// traceparent ("00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>"),
// sent as given: the daemon ignores an invalid one. An empty tp means none
// for these calls, even when the client has a WithTraceParentFunc hook.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	return context.WithValue(ctx, traceParentKey{}, tp)
}

// TraceParent returns the traceparent set by WithTraceParent and whether
// one was set.
func TraceParent(ctx context.Context) (string, bool) {
	tp, ok := ctx.Value(traceParentKey{}).(string)
	return tp, ok
}

// WithTraceParentFunc sets the hook that gives a call whose context has no
// WithTraceParent value its traceparent: f(ctx), "" for none. Use
// otelhf.TraceParent for the current OpenTelemetry span. f runs on the
// calling goroutine, once per call; it must not block.
func WithTraceParentFunc(f func(ctx context.Context) string) Option {
	return func(c *Client) { c.traceParent = f }
}

// traceParentFor is the traceparent of a call made with ctx.
func (c *Client) traceParentFor(ctx context.Context) string {
	if tp, ok := TraceParent(ctx); ok {
		return tp
	}
	if c.traceParent != nil {
		return c.traceParent(ctx)
	}
	return ""
}
