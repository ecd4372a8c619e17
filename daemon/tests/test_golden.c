/* The shared golden frames in protos/testdata: the daemon's protobuf-c code
 * decodes every frame and re-encodes it byte for byte, as every client does,
 * so all sides agree on the wire. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"

static uint8_t *read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = malloc((1 << 20) + 1);
    *len = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    return buf;
}

/* The manifest is written by protos/testdata/generate.py with one
 * "type": ... and one "file": ... per case, in that order. */
static void every_frame_round_trips(void **state) {
    (void)state;
    size_t mlen;
    char *manifest = (char *)read_file(TESTDATA_DIR "/manifest.json", &mlen);
    assert_non_null(manifest);
    manifest[mlen] = '\0';
    int cases = 0;
    for (char *p = strstr(manifest, "\"type\": \""); p; p = strstr(p + 1, "\"type\": \"")) {
        bool is_request = strncmp(p + 9, "Request\"", 8) == 0;
        char *f = strstr(p, "\"file\": \"");
        assert_non_null(f);
        f += 9;
        char name[256], path[512];
        size_t n = (size_t)(strchr(f, '"') - f);
        assert_true(n < sizeof name);
        memcpy(name, f, n);
        name[n] = '\0';
        snprintf(path, sizeof path, "%s/%s", TESTDATA_DIR, name);
        size_t len;
        uint8_t *frame = read_file(path, &len);
        assert_non_null(frame);
        size_t payload;
        assert_int_equal(hf_frame_peek(frame, len, 1 << 20, &payload), HF_FRAME_READY);
        assert_int_equal(payload + HF_FRAME_HEADER, len);
        uint8_t *again;
        size_t again_len;
        if (is_request) {
            hf_request_msg *m = hf_frame_unpack_request(frame + HF_FRAME_HEADER, payload);
            assert_non_null(m);
            again = hf_frame_pack_request(m, &again_len);
            hf_request_msg_free(m);
        } else {
            hf_response_msg *m = hf_frame_unpack_response(frame + HF_FRAME_HEADER, payload);
            assert_non_null(m);
            again = hf_frame_pack_response(m, &again_len);
            hf_response_msg_free(m);
        }
        assert_int_equal(again_len, len);
        assert_memory_equal(again, frame, len);
        free(again);
        free(frame);
        cases++;
    }
    assert_true(cases >= 10);
    free(manifest);
}

static void hold_request_fields(void **state) {
    (void)state;
    size_t len;
    uint8_t *frame = read_file(TESTDATA_DIR "/hold_request.bin", &len);
    assert_non_null(frame);
    hf_request_msg *m = hf_frame_unpack_request(frame + HF_FRAME_HEADER, len - HF_FRAME_HEADER);
    assert_non_null(m);
    assert_int_equal(m->method_case, HOLDFAST__V1__REQUEST__METHOD_HOLD);
    assert_string_equal(m->hold->namespace_, "seat");
    assert_int_equal(m->hold->n_ids, 3);
    assert_string_equal(m->hold->ids[0], "E7");
    hf_request_msg_free(m);
    free(frame);
}

static void traceparent_request_fields(void **state) {
    (void)state;
    size_t len;
    uint8_t *frame = read_file(TESTDATA_DIR "/confirm_request_traceparent.bin", &len);
    assert_non_null(frame);
    hf_request_msg *m = hf_frame_unpack_request(frame + HF_FRAME_HEADER, len - HF_FRAME_HEADER);
    assert_non_null(m);
    assert_int_equal(m->method_case, HOLDFAST__V1__REQUEST__METHOD_CONFIRM);
    assert_string_equal(m->traceparent,
                        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_string_equal(m->correlation_id, "trace-7f3a.checkout:6");
    hf_request_msg_free(m);
    free(frame);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_frame_round_trips),
        cmocka_unit_test(hold_request_fields),
        cmocka_unit_test(traceparent_request_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
