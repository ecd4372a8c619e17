/* frame.c - length-prefixed protobuf frames. */
#include "frame.h"

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
