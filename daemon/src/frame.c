/* frame.c - length-prefixed protobuf frames. */
#include "frame.h"

#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum hf_frame_status hf_frame_peek(const uint8_t *buf, size_t len, size_t max_payload,
                                   size_t *payload_len) {
    if (len < HF_FRAME_HEADER) return HF_FRAME_NEED_MORE;
    uint32_t declared = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
                        (uint32_t)buf[2] << 8 | (uint32_t)buf[3];
    *payload_len = declared;
    if (declared > max_payload) return HF_FRAME_TOO_LARGE;
    if (len - HF_FRAME_HEADER < declared) return HF_FRAME_NEED_MORE;
    return HF_FRAME_READY;
}

static uint8_t *pack(const ProtobufCMessage *msg, size_t *out_len) {
    size_t body = protobuf_c_message_get_packed_size(msg);
    if (body > UINT32_MAX) return NULL;
    uint8_t *buf = malloc(HF_FRAME_HEADER + body);
    if (!buf) return NULL;
    buf[0] = (uint8_t)(body >> 24);
    buf[1] = (uint8_t)(body >> 16);
    buf[2] = (uint8_t)(body >> 8);
    buf[3] = (uint8_t)body;
    protobuf_c_message_pack(msg, buf + HF_FRAME_HEADER);
    *out_len = HF_FRAME_HEADER + body;
    return buf;
}

uint8_t *hf_frame_pack_response(const hf_response_msg *msg, size_t *out_len) {
    return pack(&msg->base, out_len);
}

uint8_t *hf_frame_pack_request(const hf_request_msg *msg, size_t *out_len) {
    return pack(&msg->base, out_len);
}

hf_request_msg *hf_frame_unpack_request(const uint8_t *payload, size_t len) {
    return holdfast__v1__request__unpack(NULL, len, payload);
}

void hf_request_msg_free(hf_request_msg *msg) {
    if (msg) holdfast__v1__request__free_unpacked(msg, NULL);
}

static void *arena_alloc(void *data, size_t size) {
    struct hf_arena *a = data;
    size_t at = (a->used + 15) & ~(size_t)15;
    if (at <= a->cap && size <= a->cap - at) {
        a->used = at + size;
        return a->buf + at;
    }
    return malloc(size);
}

static void arena_free(void *data, void *p) {
    struct hf_arena *a = data;
    unsigned char *c = p;
    if (c >= a->buf && c < a->buf + a->cap) return; /* goes with the arena */
    free(p);
}

hf_request_msg *hf_frame_unpack_request_in(struct hf_arena *a, const uint8_t *payload,
                                           size_t len) {
    ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
    a->used = 0;
    return holdfast__v1__request__unpack(&alloc, len, payload);
}

void hf_request_msg_free_in(struct hf_arena *a, hf_request_msg *msg) {
    ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
    if (msg) holdfast__v1__request__free_unpacked(msg, &alloc);
    a->used = 0;
}

hf_response_msg *hf_frame_unpack_response(const uint8_t *payload, size_t len) {
    return holdfast__v1__response__unpack(NULL, len, payload);
}

void hf_response_msg_free(hf_response_msg *msg) {
    if (msg) holdfast__v1__response__free_unpacked(msg, NULL);
}

const char *hf_code_name(hf_code code) {
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&holdfast__v1__code__descriptor, (int)code);
    if (!v) return "UNKNOWN";
    /* Enum values are named CODE_<NAME>; logs and tools use <NAME>. */
    return strncmp(v->name, "CODE_", 5) == 0 ? v->name + 5 : v->name;
}

/* ---- strings on the wire ---- */

/* A wire varint; false past the end or beyond 10 bytes. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Messages nest a few levels at most; deeper is refused rather than walked. */
#define MAX_DEPTH 8

static bool check_message(const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                          const uint8_t *end, int depth, char *field, size_t fieldlen) {
    unsigned counts[32] = {0}; /* occurrences per field index, for "ids[i]" */
    while (p < end) {
        uint64_t tag, n;
        if (!read_varint(&p, end, &tag)) return true; /* the decoder refuses it */
        uint32_t number = (uint32_t)(tag >> 3);
        switch (tag & 7) {
        case 0:
            if (!read_varint(&p, end, &n)) return true;
            continue;
        case 1:
        case 5: {
            size_t width = (tag & 7) == 1 ? 8 : 4;
            if ((size_t)(end - p) < width) return true;
            p += width;
            continue;
        }
        case 2:
            break;
        default:
            return true; /* groups: the decoder refuses them */
        }
        if (!read_varint(&p, end, &n) || n > (uint64_t)(end - p)) return true;
        const uint8_t *value = p;
        p += n;
        const ProtobufCFieldDescriptor *fd =
            protobuf_c_message_descriptor_get_field(desc, (unsigned)number);
        if (!fd) continue; /* unknown to this daemon: not read, not checked */
        size_t index = (size_t)(fd - desc->fields);
        unsigned seen = index < 32 ? counts[index]++ : 0;
        if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (depth >= MAX_DEPTH) {
                snprintf(field, fieldlen, "%s", fd->name);
                return false;
            }
            if (!check_message(fd->descriptor, value, value + n, depth + 1, field, fieldlen))
                return false;
            continue;
        }
        if (fd->type != PROTOBUF_C_TYPE_STRING) continue;
        if (memchr(value, 0, n) || !hf_valid_utf8((const char *)value, n)) {
            if (fd->label == PROTOBUF_C_LABEL_REPEATED)
                snprintf(field, fieldlen, "%s[%u]", fd->name, seen);
            else
                snprintf(field, fieldlen, "%s", fd->name);
            return false;
        }
    }
    return true;
}

bool hf_frame_strings_ok(const uint8_t *payload, size_t len, char *field, size_t fieldlen) {
    if (fieldlen) field[0] = '\0';
    return check_message(&holdfast__v1__request__descriptor, payload, payload + len, 0, field,
                         fieldlen);
}
