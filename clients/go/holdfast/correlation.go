package holdfast

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type correlationKey struct{}

// WithCorrelationID returns a context whose calls carry id as their
// correlation id (for example the caller's trace id), so the daemon's log
// line for each request can be found. Allowed characters: [A-Za-z0-9._:-],
// at most 128 bytes.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// CorrelationID returns the correlation id set by WithCorrelationID, or "".
func CorrelationID(ctx context.Context) string {
	id, _ := ctx.Value(correlationKey{}).(string)
	return id
}

// newCorrelationID makes an id for calls whose context carries none.
func newCorrelationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "go-" + hex.EncodeToString(b[:])
}
