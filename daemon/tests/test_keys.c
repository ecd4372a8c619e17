/* Unit tests for keys.c: the documented key layout, and the runs each
 * library function takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "keys.h"

static void lengths_match(const struct hf_keyset *ks) {
    for (size_t i = 0; i < ks->count; i++) assert_int_equal(ks->lens[i], strlen(ks->keys[i]));
}

static void seats_layout(void **state) {
    (void)state;
    char *ids[] = {"12", "E7@3"};
    struct hf_keyset *ks = hf_keyset_build(HF_KEYS_SEATS, "seat", "run-1", ids, 2);
    assert_non_null(ks);
    assert_int_equal(ks->count, 6);
    assert_int_equal(ks->waiters, 3);
    assert_string_equal(ks->keys[0], "hf:{seat:run-1}:#fence");
    assert_string_equal(ks->keys[1], "hf:{seat:run-1}:12");
    assert_string_equal(ks->keys[2], "hf:{seat:run-1}:E7@3");
    assert_string_equal(ks->keys[3], "hf:{seat:run-1}:#waiters");
    assert_string_equal(ks->keys[4], "hf:{seat:run-1}:#line:12");
    assert_string_equal(ks->keys[5], "hf:{seat:run-1}:#line:E7@3");
    lengths_match(ks);
    /* hf1_release_wake: the hold keys, the waiters, the lines. */
    struct hf_strs run = hf_keys_run(ks, 1, ks->count);
    assert_int_equal(run.n, 5);
    assert_string_equal(run.v[0], "hf:{seat:run-1}:12");
    struct hf_strs lines = hf_keys_lines(ks);
    assert_int_equal(lines.n, 3);
    assert_string_equal(lines.v[0], "hf:{seat:run-1}:#waiters");
    assert_int_equal(lines.lens[2], strlen("hf:{seat:run-1}:#line:E7@3"));
    hf_keyset_free(ks);
    hf_keyset_free(NULL);
}

static void pools_layout(void **state) {
    (void)state;
    char *pools[] = {"adult", "child-1"};
    struct hf_keyset *ks = hf_keyset_build(HF_KEYS_POOLS, "ga", "show-1", pools, 2);
    assert_non_null(ks);
    assert_int_equal(ks->count, 9);
    assert_int_equal(ks->waiters, 6);
    assert_string_equal(ks->keys[0], "hf:{ga:show-1}:#fence");
    assert_string_equal(ks->keys[1], "hf:{ga:show-1}:#pooldefault");
    assert_string_equal(ks->keys[2], "hf:{ga:show-1}:#pool:adult");
    assert_string_equal(ks->keys[3], "hf:{ga:show-1}:#pexp:adult");
    assert_string_equal(ks->keys[4], "hf:{ga:show-1}:#pool:child-1");
    assert_string_equal(ks->keys[5], "hf:{ga:show-1}:#pexp:child-1");
    assert_string_equal(ks->keys[6], "hf:{ga:show-1}:#waiters");
    assert_string_equal(ks->keys[7], "hf:{ga:show-1}:#pline:adult");
    assert_string_equal(ks->keys[8], "hf:{ga:show-1}:#pline:child-1");
    lengths_match(ks);
    hf_keyset_free(ks);
    /* No pools: the fence, the default and the waiters (SetCapacity of the
     * default). */
    ks = hf_keyset_build(HF_KEYS_POOLS, "ga", "show-1", NULL, 0);
    assert_non_null(ks);
    assert_int_equal(ks->count, 3);
    assert_string_equal(ks->keys[1], "hf:{ga:show-1}:#pooldefault");
    hf_keyset_free(ks);
}

static void lines_of_hold_keys(void **state) {
    (void)state;
    const char *keys[] = {"hf:{seat:run-1}:12", "hf:{seat:run-1}:E7"};
    size_t lens[] = {strlen(keys[0]), strlen(keys[1])};
    struct hf_keyset *ks = hf_keyset_lines_of(keys, lens, 2);
    assert_non_null(ks);
    assert_int_equal(ks->count, 3);
    assert_int_equal(ks->waiters, 0);
    assert_string_equal(ks->keys[0], "hf:{seat:run-1}:#waiters");
    assert_string_equal(ks->keys[1], "hf:{seat:run-1}:#line:12");
    assert_string_equal(ks->keys[2], "hf:{seat:run-1}:#line:E7");
    lengths_match(ks);
    assert_int_equal(hf_keys_lines(ks).n, 3);
    hf_keyset_free(ks);
    /* Keys of two partitions, a '#'-key or another shape: refused. */
    const char *mixed[] = {"hf:{seat:run-1}:12", "hf:{seat:run-2}:12"};
    size_t mixed_lens[] = {strlen(mixed[0]), strlen(mixed[1])};
    assert_null(hf_keyset_lines_of(mixed, mixed_lens, 2));
    const char *fence[] = {"hf:{seat:run-1}:#fence"};
    size_t fence_len[] = {strlen(fence[0])};
    assert_null(hf_keyset_lines_of(fence, fence_len, 1));
    const char *odd[] = {"seat:run-1:12"};
    size_t odd_len[] = {strlen(odd[0])};
    assert_null(hf_keyset_lines_of(odd, odd_len, 1));
    assert_null(hf_keyset_lines_of(keys, lens, 0));
}

static void prefix(void **state) {
    (void)state;
    assert_int_equal(hf_key_prefix_len("hf:{a:b}:c", 10), 9);
    assert_int_equal(hf_key_prefix_len("hf:{a:b}c", 9), 0);
    assert_int_equal(hf_key_prefix_len("xx:{a:b}:c", 10), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seats_layout), cmocka_unit_test(pools_layout),
        cmocka_unit_test(lines_of_hold_keys), cmocka_unit_test(prefix)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
