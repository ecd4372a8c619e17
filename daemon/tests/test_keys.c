/* Unit tests for keys.c: the documented key layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "keys.h"

static void layout(void **state) {
    (void)state;
    char *ids[] = {"12", "E7"};
    struct hf_keyset *ks = hf_keyset_build("seat", "run-1", ids, 2);
    assert_non_null(ks);
    assert_int_equal(ks->count, 3);
    assert_string_equal(ks->keys[0], "hf:{seat:run-1}:#fence");
    assert_string_equal(ks->keys[1], "hf:{seat:run-1}:12");
    assert_string_equal(ks->keys[2], "hf:{seat:run-1}:E7");
    assert_int_equal(ks->lens[2], strlen("hf:{seat:run-1}:E7"));
    hf_keyset_free(ks);
    hf_keyset_free(NULL);
}

static void pool_layout(void **state) {
    (void)state;
    char *pools[] = {"adult", "child-1"};
    struct hf_keyset *ks = hf_pool_keyset_build("ga", "show-1", pools, 2);
    assert_non_null(ks);
    assert_int_equal(ks->count, HF_POOL_KEYS_BEFORE + 4);
    assert_string_equal(ks->keys[0], "hf:{ga:show-1}:#fence");
    assert_string_equal(ks->keys[1], "hf:{ga:show-1}:#pooldefault");
    assert_string_equal(ks->keys[2], "hf:{ga:show-1}:#pool:adult");
    assert_string_equal(ks->keys[3], "hf:{ga:show-1}:#pexp:adult");
    assert_string_equal(ks->keys[4], "hf:{ga:show-1}:#pool:child-1");
    assert_string_equal(ks->keys[5], "hf:{ga:show-1}:#pexp:child-1");
    for (size_t i = 0; i < ks->count; i++) assert_int_equal(ks->lens[i], strlen(ks->keys[i]));
    hf_keyset_free(ks);
    /* No pools: the fence and the default only (SetCapacity of the default). */
    ks = hf_pool_keyset_build("ga", "show-1", NULL, 0);
    assert_non_null(ks);
    assert_int_equal(ks->count, 2);
    assert_string_equal(ks->keys[1], "hf:{ga:show-1}:#pooldefault");
    hf_keyset_free(ks);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(layout), cmocka_unit_test(pool_layout)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
