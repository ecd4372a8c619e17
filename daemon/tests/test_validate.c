/* Unit tests for validate.c: what may become part of a key. */
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

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(names), cmocka_unit_test(references)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
