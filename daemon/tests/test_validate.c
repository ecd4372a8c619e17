/* Unit tests for validate.c: what may become part of a key, and UTF-8. */
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),          cmocka_unit_test(references),
        cmocka_unit_test(utf8_valid),     cmocka_unit_test(utf8_overlong),
        cmocka_unit_test(utf8_surrogates), cmocka_unit_test(utf8_too_large),
        cmocka_unit_test(utf8_broken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
