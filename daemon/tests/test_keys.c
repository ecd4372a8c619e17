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

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(layout)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
