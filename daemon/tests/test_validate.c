/* Unit tests for validate.c: what may become part of a key, UTF-8, and the
 * W3C traceparent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "validate.h"

static void names(void **state) {
    (void)state;
    const char *good[] = {"12", "E7", "run-2026-12-01-KTX101", "a.b_c-d", "Z"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(hf_valid_name(good[i], strlen(good[i])));
    const char *bad[] = {"", "a b", "{x}", "a:b", "a\nb", "*", "é", "a/b", "#fence"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(hf_valid_name(bad[i], strlen(bad[i])));
    char long_name[130];
    memset(long_name, 'a', sizeof long_name);
    assert_true(hf_valid_name(long_name, 128));
    assert_false(hf_valid_name(long_name, 129));
    assert_false(hf_valid_name("a\0b", 3));
}

static void references(void **state) {
    (void)state;
    assert_true(hf_valid_ref_id("trace:abc-1", 11));
    assert_false(hf_valid_ref_id("with space", 10));
    assert_false(hf_valid_ref_id("", 0));
    assert_false(hf_valid_ref_id(NULL, 0));
}

static bool utf8(const char *s) { return hf_valid_utf8(s, strlen(s)); }

static void utf8_valid(void **state) {
    (void)state;
    assert_true(hf_valid_utf8("", 0));
    assert_true(hf_valid_utf8(NULL, 0));
    assert_true(utf8("plain ASCII, order 42"));
    assert_true(utf8("\x7F"));                 /* the last 1-byte form */
    assert_true(utf8("\xC2\x80"));             /* U+0080, the first 2-byte form */
    assert_true(utf8("caf\xC3\xA9"));          /* é */
    assert_true(utf8("\xDF\xBF"));             /* U+07FF */
    assert_true(utf8("\xE0\xA0\x80"));         /* U+0800, the first 3-byte form */
    assert_true(utf8("\xE2\x82\xAC 12"));      /* € */
    assert_true(utf8("\xED\x9F\xBF"));         /* U+D7FF, just below the surrogates */
    assert_true(utf8("\xEE\x80\x80"));         /* U+E000, just above them */
    assert_true(utf8("\xEF\xBF\xBF"));         /* U+FFFF */
    assert_true(utf8("\xF0\x90\x80\x80"));     /* U+10000, the first 4-byte form */
    assert_true(utf8("\xF0\x9F\x8E\xAB seat")); /* 🎫 */
    assert_true(utf8("\xF4\x8F\xBF\xBF"));     /* U+10FFFF, the last code point */
    assert_true(utf8("\xEC\xA2\x8C\xEC\x84\x9D 12"));
}

static void utf8_overlong(void **state) {
    (void)state;
    assert_false(utf8("\xC0\x80"));             /* NUL in two bytes */
    assert_false(utf8("\xC0\xAF"));             /* '/' */
    assert_false(utf8("\xC1\xBF"));             /* U+007F */
    assert_false(utf8("\xE0\x80\xAF"));         /* '/' in three bytes */
    assert_false(utf8("\xE0\x9F\xBF"));         /* U+07FF in three bytes */
    assert_false(utf8("\xF0\x80\x80\xAF"));     /* '/' in four bytes */
    assert_false(utf8("\xF0\x8F\xBF\xBF"));     /* U+FFFF in four bytes */
}

static void utf8_surrogates(void **state) {
    (void)state;
    assert_false(utf8("\xED\xA0\x80"));                 /* U+D800 */
    assert_false(utf8("\xED\xAD\xBF"));                 /* U+DB7F */
    assert_false(utf8("\xED\xB0\x80"));                 /* U+DC00 */
    assert_false(utf8("\xED\xBF\xBF"));                 /* U+DFFF */
    assert_false(utf8("\xED\xA0\xBD\xED\xB8\x80"));     /* a CESU-8 pair */
}

static void utf8_too_large(void **state) {
    (void)state;
    assert_false(utf8("\xF4\x90\x80\x80"));         /* U+110000 */
    assert_false(utf8("\xF7\xBF\xBF\xBF"));         /* U+1FFFFF */
    assert_false(utf8("\xF8\x88\x80\x80\x80"));     /* 5-byte form */
    assert_false(utf8("\xFC\x84\x80\x80\x80\x80")); /* 6-byte form */
    assert_false(utf8("\xFE"));
    assert_false(utf8("\xFF"));
}

static void utf8_broken(void **state) {
    (void)state;
    /* Truncated sequences, at the end and in the middle. */
    assert_false(utf8("\xC3"));
    assert_false(utf8("caf\xC3"));
    assert_false(utf8("\xE2\x82"));
    assert_false(utf8("\xF0\x9F\x8E"));
    assert_false(utf8("\xE2\x82 x"));
    assert_false(utf8("\xF0\x9F\x8E!"));
    /* The length given, not the NUL, is where the string ends. */
    assert_false(hf_valid_utf8("\xE2\x82\xAC", 2));
    assert_true(hf_valid_utf8("\xE2\x82\xAC", 3));
    /* Continuation bytes with no lead, and a lead followed by a lead. */
    assert_false(utf8("\x80"));
    assert_false(utf8("a\xBF" "b"));
    assert_false(utf8("\xC3\xC3\xA9"));
}

/* ---- W3C traceparent ---- */

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static bool tp(const char *s, char out[HF_TRACEPARENT_LEN + 1]) {
    return hf_traceparent_parse(s, strlen(s), out);
}

static void traceparent_valid(void **state) {
    (void)state;
    char out[HF_TRACEPARENT_LEN + 1];
    assert_true(tp(TP, out));
    assert_string_equal(out, TP);
    /* Not sampled; unknown flags of version 00 are kept. */
    assert_true(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", out));
    assert_string_equal(out, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    assert_true(tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09", out));
    assert_string_equal(out, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09");
    /* The length given, not the NUL, is where it ends. */
    assert_true(hf_traceparent_parse(TP "-more", HF_TRACEPARENT_LEN, out));
    assert_string_equal(out, TP);
}

static void traceparent_future_versions(void **state) {
    (void)state;
    char out[HF_TRACEPARENT_LEN + 1];
    /* A higher version: its ids and sampled flag, written as version 00. */
    assert_true(tp("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", out));
    assert_string_equal(out, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_true(tp("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe-what-ever", out));
    assert_string_equal(out, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    /* ...but more only after a dash. */
    assert_false(tp("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", out));
    assert_string_equal(out, "");
    /* Version ff is invalid. */
    assert_false(tp("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", out));
}

static void traceparent_invalid(void **state) {
    (void)state;
    char out[HF_TRACEPARENT_LEN + 1];
    const char *bad[] = {
        "",
        "00",
        /* uppercase hex */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
        "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        /* all-zero ids */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        /* version 00 is exactly 55 characters */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        /* wrong widths, separators, characters */
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        "00-4bf92f3577b34da6a3ce929d0e0e47z6-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7 01",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0'",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(out, 'x', sizeof out);
        assert_false(tp(bad[i], out));
        assert_string_equal(out, "");
    }
    assert_false(hf_traceparent_parse(NULL, 0, out));
    /* A NUL inside. */
    char nul[] = TP;
    nul[10] = '\0';
    assert_false(hf_traceparent_parse(nul, sizeof nul - 1, out));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),          cmocka_unit_test(references),
        cmocka_unit_test(utf8_valid),     cmocka_unit_test(utf8_overlong),
        cmocka_unit_test(utf8_surrogates), cmocka_unit_test(utf8_too_large),
        cmocka_unit_test(utf8_broken),
        cmocka_unit_test(traceparent_valid),
        cmocka_unit_test(traceparent_future_versions),
        cmocka_unit_test(traceparent_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
