package holdfast

import (
	"errors"
	"strconv"
	"strings"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// Code is the daemon's result code (holdfast.v1.Code).
type Code = pb.Code

// Result codes, named without the protobuf prefix.
const (
	CodeOK                  = pb.Code_CODE_OK
	CodeHeldByAnother       = pb.Code_CODE_HELD_BY_ANOTHER
	CodeNotHeld             = pb.Code_CODE_NOT_HELD
	CodeConfirmed           = pb.Code_CODE_CONFIRMED
	CodeInvalidArgument     = pb.Code_CODE_INVALID_ARGUMENT
	CodeUnavailable         = pb.Code_CODE_UNAVAILABLE
	CodeDeadlineExceeded    = pb.Code_CODE_DEADLINE_EXCEEDED
	CodeResourceExhausted   = pb.Code_CODE_RESOURCE_EXHAUSTED
	CodePermissionDenied    = pb.Code_CODE_PERMISSION_DENIED
	CodeConflict            = pb.Code_CODE_CONFLICT
	CodeHoldLost            = pb.Code_CODE_HOLD_LOST
	CodeStale               = pb.Code_CODE_STALE
	CodeIdempotencyMismatch = pb.Code_CODE_IDEMPOTENCY_MISMATCH
	CodeNotFound            = pb.Code_CODE_NOT_FOUND
	CodeUnimplemented       = pb.Code_CODE_UNIMPLEMENTED
	CodeInternal            = pb.Code_CODE_INTERNAL
	CodeFailedPrecondition  = pb.Code_CODE_FAILED_PRECONDITION
)

// Error is a failed call. Code says what happened; the other fields are
// context for people and logs. It never contains a token.
//
// errors.Is matches an *Error against any *Error with the same Code, so the
// sentinels below work as targets: errors.Is(err, holdfast.ErrHeldByAnother).
type Error struct {
	Op            string // "hold", "extend", "release", ...
	Code          Code
	Message       string // the daemon's (or the client's) explanation
	Field         string // the offending request field, for CodeInvalidArgument
	ResourceID    string // the resource the code is about, when there is one
	CorrelationID string // the request's correlation id, for finding its log line
	Degraded      bool   // the daemon answered under its best_effort policy

	cause error // underlying I/O or context error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("holdfast: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(CodeName(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.ResourceID != "" {
		b.WriteString(" (resource ")
		b.WriteString(e.ResourceID)
		b.WriteString(")")
	}
	if e.Field != "" {
		b.WriteString(" (field ")
		b.WriteString(e.Field)
		b.WriteString(")")
	}
	if e.cause != nil && !strings.Contains(e.Message, e.cause.Error()) {
		b.WriteString(": ")
		b.WriteString(e.cause.Error())
	}
	if e.CorrelationID != "" {
		b.WriteString(" [correlation_id=")
		b.WriteString(e.CorrelationID)
		b.WriteString("]")
	}
	return b.String()
}

// Unwrap returns the underlying cause (for example context.DeadlineExceeded
// when the local deadline fired), so errors.Is works on it too.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeName is how a code prints (the client contract): its enum name without
// the CODE_ prefix, "HELD_BY_ANOTHER" for CODE_HELD_BY_ANOTHER; "CODE_99" for
// a value this client does not know (a newer daemon). Code.String() keeps the
// protobuf name.
func CodeName(c Code) string {
	if name, ok := pb.Code_name[int32(c)]; ok {
		return strings.TrimPrefix(name, "CODE_")
	}
	return "CODE_" + strconv.Itoa(int(c))
}

// Sentinels for errors.Is. Each matches any *Error with its Code.
var (
	ErrHeldByAnother       = &Error{Code: CodeHeldByAnother}
	ErrNotHeld             = &Error{Code: CodeNotHeld}
	ErrConfirmed           = &Error{Code: CodeConfirmed}
	ErrInvalidArgument     = &Error{Code: CodeInvalidArgument}
	ErrUnavailable         = &Error{Code: CodeUnavailable}
	ErrDeadlineExceeded    = &Error{Code: CodeDeadlineExceeded}
	ErrResourceExhausted   = &Error{Code: CodeResourceExhausted}
	ErrPermissionDenied    = &Error{Code: CodePermissionDenied}
	ErrConflict            = &Error{Code: CodeConflict}
	ErrHoldLost            = &Error{Code: CodeHoldLost}
	ErrStale               = &Error{Code: CodeStale}
	ErrIdempotencyMismatch = &Error{Code: CodeIdempotencyMismatch}
	ErrNotFound            = &Error{Code: CodeNotFound}
	ErrUnimplemented       = &Error{Code: CodeUnimplemented}
	ErrInternal            = &Error{Code: CodeInternal}
	ErrFailedPrecondition  = &Error{Code: CodeFailedPrecondition}
)

// ErrClosed is returned by calls on a Client after Close, and by calls that
// were in flight when Close ran.
var ErrClosed = errors.New("holdfast: client is closed")

// CodeOf returns the Code carried by err: CodeOK for nil, the *Error's Code
// when err wraps one, CodeUnspecified otherwise (for example ErrClosed or a
// cancelled context).
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return pb.Code_CODE_UNSPECIFIED
}

// ResourceOf returns the resource id an error is about ("" when none), e.g.
// the seat that another token holds.
func ResourceOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.ResourceID
	}
	return ""
}

// IsHeldByAnother reports whether another token holds one of the resources.
func IsHeldByAnother(err error) bool { return CodeOf(err) == CodeHeldByAnother }

// IsNotHeld reports whether the hold expired or never existed.
func IsNotHeld(err error) bool { return CodeOf(err) == CodeNotHeld }

// IsConfirmed reports whether a resource is already confirmed (sold).
func IsConfirmed(err error) bool { return CodeOf(err) == CodeConfirmed }

// IsConflict reports whether Confirm found a resource claimed by someone else.
func IsConflict(err error) bool { return CodeOf(err) == CodeConflict }

// IsHoldLost reports whether Confirm found the hold no longer owned.
func IsHoldLost(err error) bool { return CodeOf(err) == CodeHoldLost }

// IsUnavailable reports whether the daemon or its backends were unreachable
// or the outcome could not be known.
func IsUnavailable(err error) bool { return CodeOf(err) == CodeUnavailable }

// IsDeadlineExceeded reports whether the call's deadline passed first.
func IsDeadlineExceeded(err error) bool { return CodeOf(err) == CodeDeadlineExceeded }

// IsRetryable reports whether sending the same call again, after a wait,
// may succeed: UNAVAILABLE, DEADLINE_EXCEEDED (the outcome may be unknown)
// and RESOURCE_EXHAUSTED (a limit refused the request before acting on it).
// Retry Confirm and Cancel only with the same idempotency key. False for nil,
// ErrClosed, a cancelled context and every other code.
func IsRetryable(err error) bool {
	switch CodeOf(err) {
	case CodeUnavailable, CodeDeadlineExceeded, CodeResourceExhausted:
		return true
	}
	return false
}
