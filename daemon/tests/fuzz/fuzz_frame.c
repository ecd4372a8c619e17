/* libFuzzer target: a client's byte stream, cut into frames, decoded and
 * checked (strings on the wire) the way conn.c and request.c do it. Frames are capped at 4 KiB so the fuzzer explores the
 * parser, not the allocator. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "frame.h"
#include "ops_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t off = 0;
    while (off < size) {
        size_t payload;
        enum hf_frame_status st = hf_frame_peek(data + off, size - off, 4096, &payload);
        if (st != HF_FRAME_READY) break;
        hf_request_msg *msg = hf_frame_unpack_request(data + off + HF_FRAME_HEADER, payload);
        if (msg) {
            /* Every method case maps to one row (or the unknown row). */
            const struct hf_op_table *t = hf_ops_table();
            size_t i = 0;
            while (i + 1 < t->n && t->ops[i].method != (int)msg->method_case) i++;
            if (!t->ops[i].name) abort();
            /* The wire check the request layer runs on every decoded frame. */
            char field[64];
            if (!hf_frame_strings_ok(data + off + HF_FRAME_HEADER, payload, field, sizeof field) &&
                field[0] == '\0')
                abort(); /* a refusal always names the field */
            size_t len;
            uint8_t *again = hf_frame_pack_request(msg, &len);
            hf_request_msg_free(msg);
            free(again);
        }
        off += HF_FRAME_HEADER + payload;
    }
    return 0;
}
