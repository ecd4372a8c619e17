/* Unit tests for token.c: shape, randomness, fingerprints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "token.h"

static int setup(void **state) {
    (void)state;
    return hf_token_init(NULL);
}

static void random_parts_are_base64url_and_fresh(void **state) {
    (void)state;
    char a[HF_TOKEN_RANDOM_CHARS + 1], b[HF_TOKEN_RANDOM_CHARS + 1];
    assert_int_equal(hf_token_random(a), 0);
    assert_int_equal(hf_token_random(b), 0);
    assert_int_equal(strlen(a), HF_TOKEN_RANDOM_CHARS);
    assert_string_not_equal(a, b);
    char token[HF_TOKEN_MAX_LEN + 1];
    snprintf(token, sizeof token, "1795987408474528.%s", a);
    uint64_t fence = 0;
    assert_true(hf_token_parse(token, strlen(token), &fence));
    assert_true(fence == 1795987408474528ull);
}

static void malformed_tokens_are_refused(void **state) {
    (void)state;
    const char *bad[] = {
        "", ".", "12.", ".AAAAAAAAAAAAAAAAAAAAAA", "12.AAAAAAAAAAAAAAAAAAAAA",
        "12.AAAAAAAAAAAAAAAAAAAAAAA", "12.AAAAAAAAAAAAAAAAAAAA=A", "x12.AAAAAAAAAAAAAAAAAAAAAA",
        "123456789012345678901.AAAAAAAAAAAAAAAAAAAAAA", "99999999999999999999.AAAAAAAAAAAAAAAAAAAAAA",
        "12.AAAAAAAAAAAAAAAAAAAA{}", "!confirmed:12",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(hf_token_parse(bad[i], strlen(bad[i]), NULL));
    const char *good = "18446744073709551615.AAAAAAAAAAAAAAAAAAAA-_";
    assert_true(hf_token_parse(good, strlen(good), NULL));
}

static void fingerprints_are_stable_short_and_keyed(void **state) {
    (void)state;
    const char *t = "5.AAAAAAAAAAAAAAAAAAAAAA";
    char a[HF_FINGERPRINT_CHARS + 1], b[HF_FINGERPRINT_CHARS + 1], c[HF_FINGERPRINT_CHARS + 1];
    hf_token_fingerprint(t, strlen(t), a);
    hf_token_fingerprint(t, strlen(t), b);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), HF_FINGERPRINT_CHARS);
    assert_null(strstr(t, a));
    assert_int_equal(hf_token_init("operator key"), 0);
    hf_token_fingerprint(t, strlen(t), c);
    assert_string_not_equal(a, c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_parts_are_base64url_and_fresh),
        cmocka_unit_test(malformed_tokens_are_refused),
        cmocka_unit_test(fingerprints_are_stable_short_and_keyed),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
