/* frame.h - the wire framing (4-byte big-endian length + protobuf envelope)
 * and envelope helpers. No I/O here, so it can be unit-tested and fuzzed. */
#ifndef HF_FRAME_H
#define HF_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "holdfast/v1/holdfast.pb-c.h"

#define HF_FRAME_HEADER 4

typedef Holdfast__V1__Request hf_request_msg;
typedef Holdfast__V1__Response hf_response_msg;
typedef Holdfast__V1__Code hf_code;
/* HF_CODE(NOT_HELD) for HOLDFAST__V1__CODE__CODE_NOT_HELD. */
#define HF_CODE(name) HOLDFAST__V1__CODE__CODE_##name

enum hf_frame_status {
    HF_FRAME_NEED_MORE,  /* not a whole frame yet */
    HF_FRAME_READY,      /* a whole frame: payload length in *payload_len */
    HF_FRAME_TOO_LARGE,  /* declared length above the limit: stream unusable */
};

/* Inspect the start of `buf`. */
enum hf_frame_status hf_frame_peek(const uint8_t *buf, size_t len, size_t max_payload,
                                   size_t *payload_len);

/* A bump allocator over a caller's buffer, to decode a request without a
 * malloc per field; what does not fit is malloc'd (and freed) as usual. */
struct hf_arena {
    unsigned char *buf;
    size_t cap, used;
};

/* Decode into `a` (NULL: not a Request); free with hf_request_msg_free_in
 * and the same arena, before the arena's buffer goes. */
hf_request_msg *hf_frame_unpack_request_in(struct hf_arena *a, const uint8_t *payload,
                                           size_t len);
void hf_request_msg_free_in(struct hf_arena *a, hf_request_msg *msg);

/* Pack an envelope behind its 4-byte length into a malloc'd buffer. */
uint8_t *hf_frame_pack_response(const hf_response_msg *msg, size_t *out_len);
uint8_t *hf_frame_pack_request(const hf_request_msg *msg, size_t *out_len);

/* Every string field of a Request, nested messages included, checked on the
 * wire (protobuf-c stores strings NUL-terminated, so an embedded NUL would
 * silently cut a value short after decoding): true when each holds valid
 * UTF-8 without NUL bytes. Otherwise false, with the offending field's
 * name (e.g. "ids[1]", "correlation_id") in `field`. Call it on a payload
 * that decodes. */
bool hf_frame_strings_ok(const uint8_t *payload, size_t len, char *field, size_t fieldlen);

/* NULL when the bytes are not a valid Request. Free with hf_request_msg_free. */
hf_request_msg *hf_frame_unpack_request(const uint8_t *payload, size_t len);
void hf_request_msg_free(hf_request_msg *msg);
hf_response_msg *hf_frame_unpack_response(const uint8_t *payload, size_t len);
void hf_response_msg_free(hf_response_msg *msg);

/* "OK", "HELD_BY_ANOTHER", ... (the enum name without CODE_). */
const char *hf_code_name(hf_code code);

#endif
