/* Unit tests for frame.c: framing boundaries and envelope round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"

static void peek_needs_a_header(void **state) {
    (void)state;
    uint8_t buf[3] = {0, 0, 0};
    size_t n;
    assert_int_equal(hf_frame_peek(buf, 0, 100, &n), HF_FRAME_NEED_MORE);
    assert_int_equal(hf_frame_peek(buf, 3, 100, &n), HF_FRAME_NEED_MORE);
}

static void peek_waits_for_the_whole_payload(void **state) {
    (void)state;
    uint8_t buf[8] = {0, 0, 0, 5, 1, 2, 3, 4};
    size_t n;
    assert_int_equal(hf_frame_peek(buf, 8, 100, &n), HF_FRAME_NEED_MORE);
    assert_int_equal(n, 5);
    uint8_t full[9] = {0, 0, 0, 5, 1, 2, 3, 4, 5};
    assert_int_equal(hf_frame_peek(full, 9, 100, &n), HF_FRAME_READY);
}

static void peek_refuses_oversized_lengths_at_once(void **state) {
    (void)state;
    uint8_t buf[4] = {0xff, 0xff, 0xff, 0xf0};
    size_t n;
    assert_int_equal(hf_frame_peek(buf, 4, 65536, &n), HF_FRAME_TOO_LARGE);
    uint8_t edge[4] = {0, 1, 0, 1}; /* 65537 */
    assert_int_equal(hf_frame_peek(edge, 4, 65536, &n), HF_FRAME_TOO_LARGE);
    uint8_t ok[4] = {0, 1, 0, 0}; /* 65536: allowed, needs more */
    assert_int_equal(hf_frame_peek(ok, 4, 65536, &n), HF_FRAME_NEED_MORE);
}

static void request_round_trip(void **state) {
    (void)state;
    char *ids[] = {"E7", "E8"};
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
    hold.namespace_ = "seat";
    hold.partition = "run-1";
    hold.ids = ids;
    hold.n_ids = 2;
    hold.ttl_ms = 1500;
    req.id = UINT64_MAX;
    req.correlation_id = "c-1";
    req.timeout_ms = 250;
    req.method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD;
    req.hold = &hold;
    size_t len;
    uint8_t *frame = hf_frame_pack_request(&req, &len);
    assert_non_null(frame);
    size_t payload;
    assert_int_equal(hf_frame_peek(frame, len, 1 << 16, &payload), HF_FRAME_READY);
    assert_int_equal(payload + HF_FRAME_HEADER, len);
    hf_request_msg *back = hf_frame_unpack_request(frame + HF_FRAME_HEADER, payload);
    assert_non_null(back);
    assert_true(back->id == UINT64_MAX);
    assert_int_equal(back->method_case, HOLDFAST__V1__REQUEST__METHOD_HOLD);
    assert_string_equal(back->hold->partition, "run-1");
    assert_int_equal(back->hold->n_ids, 2);
    assert_string_equal(back->hold->ids[1], "E8");
    hf_request_msg_free(back);
    free(frame);
}

/* Pack a Hold, then overwrite the first `from` byte in the payload with `to`:
 * protobuf-c cannot pack a NUL inside a string, the wire can carry one. */
static uint8_t *hold_with_byte(const char *cid, char *ns, char **ids, size_t n_ids, uint8_t from,
                               uint8_t to, size_t *len) {
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
    hold.namespace_ = ns;
    hold.partition = "run-1";
    hold.ids = ids;
    hold.n_ids = n_ids;
    req.id = 7;
    req.correlation_id = (char *)cid;
    req.method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD;
    req.hold = &hold;
    uint8_t *frame = hf_frame_pack_request(&req, len);
    assert_non_null(frame);
    uint8_t *hit = memchr(frame + HF_FRAME_HEADER, from, *len - HF_FRAME_HEADER);
    assert_non_null(hit);
    *hit = to;
    return frame;
}

static void strings_with_nul_or_bad_utf8_are_named(void **state) {
    (void)state;
    char field[64];
    size_t len;
    char *ids[] = {"E7", "E#7", "E9"};
    uint8_t *f = hold_with_byte("c-1", "seat", ids, 3, '#', 0, &len);
    /* It still decodes (as "E"): only the wire check can tell. */
    hf_request_msg *msg = hf_frame_unpack_request(f + HF_FRAME_HEADER, len - HF_FRAME_HEADER);
    assert_non_null(msg);
    assert_string_equal(msg->hold->ids[1], "E");
    hf_request_msg_free(msg);
    assert_false(hf_frame_strings_ok(f + HF_FRAME_HEADER, len - HF_FRAME_HEADER, field,
                                     sizeof field));
    assert_string_equal(field, "ids[1]");
    free(f);

    f = hold_with_byte("c-1", "s#at", ids, 1, '#', 0xff, &len);
    assert_false(hf_frame_strings_ok(f + HF_FRAME_HEADER, len - HF_FRAME_HEADER, field,
                                     sizeof field));
    assert_string_equal(field, "namespace");
    free(f);

    f = hold_with_byte("c#1", "seat", ids, 1, '#', 0, &len);
    assert_false(hf_frame_strings_ok(f + HF_FRAME_HEADER, len - HF_FRAME_HEADER, field,
                                     sizeof field));
    assert_string_equal(field, "correlation_id");
    free(f);

    /* A lone continuation byte, an overlong form and a surrogate. */
    static const uint8_t bad[][3] = {{0x80, 0, 0}, {0xc0, 0xaf, 0}, {0xed, 0xa0, 0x80}};
    for (size_t i = 0; i < 3; i++) {
        char *one[] = {"A###"};
        f = hold_with_byte("c-1", "seat", one, 1, '#', bad[i][0], &len);
        uint8_t *rest = memchr(f + HF_FRAME_HEADER, '#', len - HF_FRAME_HEADER);
        rest[0] = bad[i][1] ? bad[i][1] : 'x';
        if (bad[i][2]) rest[1] = bad[i][2];
        assert_false(hf_frame_strings_ok(f + HF_FRAME_HEADER, len - HF_FRAME_HEADER, field,
                                         sizeof field));
        assert_string_equal(field, "ids[0]");
        free(f);
    }

    /* Valid multi-byte UTF-8 passes. */
    f = hold_with_byte("c-1", "seat", ids, 3, '#', '#', &len);
    assert_true(hf_frame_strings_ok(f + HF_FRAME_HEADER, len - HF_FRAME_HEADER, field,
                                    sizeof field));
    free(f);
}

static void garbage_is_refused(void **state) {
    (void)state;
    uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_null(hf_frame_unpack_request(junk, sizeof junk));
    uint8_t truncated[] = {0x52, 0x05, 'a'}; /* field 10 says 5 bytes, has 1 */
    assert_null(hf_frame_unpack_request(truncated, sizeof truncated));
    hf_request_msg_free(NULL);
}

static void names(void **state) {
    (void)state;
    assert_string_equal(hf_code_name(HOLDFAST__V1__CODE__CODE_OK), "OK");
    assert_string_equal(hf_code_name(HOLDFAST__V1__CODE__CODE_HELD_BY_ANOTHER), "HELD_BY_ANOTHER");
    assert_string_equal(hf_code_name((hf_code)999), "UNKNOWN");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(peek_needs_a_header),
        cmocka_unit_test(peek_waits_for_the_whole_payload),
        cmocka_unit_test(peek_refuses_oversized_lengths_at_once),
        cmocka_unit_test(request_round_trip),
        cmocka_unit_test(garbage_is_refused),
        cmocka_unit_test(strings_with_nul_or_bad_utf8_are_named),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
