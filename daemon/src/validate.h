/* validate.h - the one place that decides what a name from outside may be. */
#ifndef HF_VALIDATE_H
#define HF_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#define HF_NAME_MAX 128
/* Confirm/Cancel: what the database stores beside a claim. */
#define HF_MAX_PAYLOAD_BYTES 4096  /* opaque bytes */
#define HF_MAX_REFERENCE_BYTES 256 /* UTF-8 text (hf_valid_utf8) */

/* Namespaces, partitions and resource ids: [A-Za-z0-9._-], 1..128 bytes.
 * No braces, colons or spaces, so nobody can forge a key or a hash tag. */
bool hf_valid_name(const char *s, size_t len);
/* Correlation ids and idempotency keys also allow ':' (trace ids use it). */
bool hf_valid_ref_id(const char *s, size_t len);
/* Well-formed UTF-8: no overlong forms, no surrogates, nothing above
 * U+10FFFF, no truncated sequence. A NUL byte is well-formed here (PostgreSQL
 * text refuses it: callers pass C strings, measured with strlen). Empty is
 * valid, and s may then be NULL. */
bool hf_valid_utf8(const char *s, size_t len);

/* W3C trace context (https://www.w3.org/TR/trace-context/), the traceparent
 * header: "00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>". */
#define HF_TRACEPARENT_LEN 55
/* A valid traceparent, written to `out` in its version-00 form (55 chars and
 * a NUL; only lowercase hex and dashes, so it may go into SQL text and log
 * lines as it is); false, with out = "", for anything else. The spec's
 * rules: lowercase hex only; version ff is invalid; an all-zero trace-id or
 * parent-id is invalid; version 00 is exactly 55 characters; a higher
 * version is at least 55 characters, followed by '-' if longer, and is read
 * as its trace-id, parent-id and sampled flag. */
bool hf_traceparent_parse(const char *s, size_t len, char out[HF_TRACEPARENT_LEN + 1]);

/* The index of the first name that repeats an earlier one, or n (ids,
 * pools: each may appear once in a request). */
size_t hf_first_duplicate(char *const *names, size_t n);

#endif
