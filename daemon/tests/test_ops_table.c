/* test_ops_table.c - the op table's rows, and the duplicate-id check that
 * every resource op runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"
#include "ops_common.h"
#include "ops_table.h"

static void every_method_has_one_row(void **state) {
    (void)state;
    const struct hf_op_table *t = hf_ops_table();
    assert_true(t->n >= 2);
    /* Every method of the proto's Request oneof is served by exactly one row. */
    const ProtobufCMessageDescriptor *desc = &holdfast__v1__request__descriptor;
    size_t methods = 0;
    for (unsigned f = 0; f < desc->n_fields; f++) {
        const ProtobufCFieldDescriptor *fd = &desc->fields[f];
        if (!(fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) continue;
        methods++;
        size_t rows = 0;
        for (size_t i = 0; i < t->n; i++) rows += t->ops[i].method == (int)fd->id;
        assert_int_equal(rows, 1);
    }
    assert_int_equal(methods + 1, t->n); /* + the unknown row */
}

static void rows_are_consistent(void **state) {
    (void)state;
    const struct hf_op_table *t = hf_ops_table();
    for (size_t i = 0; i < t->n; i++) {
        assert_int_equal(t->ops[i].index, i);
        assert_non_null(t->ops[i].handler);
        for (size_t j = 0; j < i; j++) assert_string_not_equal(t->ops[i].name, t->ops[j].name);
    }
    const struct hf_op_def *last = &t->ops[t->n - 1];
    assert_string_equal(last->name, "unknown");
    assert_int_equal(last->method, HOLDFAST__V1__REQUEST__METHOD__NOT_SET);
    assert_int_equal(last->flags, 0);
}

static void duplicates_short_lists(void **state) {
    (void)state;
    char *none[] = {"A1", "A2", "A3"};
    assert_int_equal(hf_first_duplicate(none, 3), 3);
    char *dup[] = {"A1", "A2", "A1", "A2"};
    assert_int_equal(hf_first_duplicate(dup, 4), 2);
    assert_int_equal(hf_first_duplicate(dup, 0), 0);
}

/* Long lists take the sorted path; the answer must be the same. */
static void duplicates_long_lists(void **state) {
    (void)state;
    enum { N = 2000 };
    char **ids = calloc(N, sizeof *ids);
    char (*text)[16] = calloc(N, sizeof *text);
    assert_non_null(ids);
    assert_non_null(text);
    for (size_t i = 0; i < N; i++) {
        snprintf(text[i], sizeof text[i], "S%zu", (i * 7919) % N); /* a permutation */
        ids[i] = text[i];
    }
    assert_int_equal(hf_first_duplicate(ids, N), N);
    ids[1500] = ids[900]; /* the later of two repeats is reported first */
    ids[1200] = ids[30];
    assert_int_equal(hf_first_duplicate(ids, N), 1200);
    free(ids);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_method_has_one_row),
        cmocka_unit_test(rows_are_consistent),
        cmocka_unit_test(duplicates_short_lists),
        cmocka_unit_test(duplicates_long_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
