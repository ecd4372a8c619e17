/* test_ops_table.c - the op table's rows, and the duplicate-id check that
 * every resource op runs. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"
#include "ops_common.h"
#include "validate.h"
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
    assert_true(last->codes & (1u << HF_CODE(UNIMPLEMENTED)));
}

static const struct hf_op_def *row(const char *name) {
    const struct hf_op_table *t = hf_ops_table();
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->ops[i].name, name) == 0) return &t->ops[i];
    fail_msg("no row %s", name);
    return NULL;
}

#define BIT(name) (1u << HF_CODE(name))

/* Every row lists the codes the request layer may answer for it, and a
 * resource op's own codes: the metrics export a zero series for each of
 * these and no other. */
static void rows_list_their_codes(void **state) {
    (void)state;
    const struct hf_op_table *t = hf_ops_table();
    unsigned request = BIT(INVALID_ARGUMENT) | BIT(UNAVAILABLE) | BIT(RESOURCE_EXHAUSTED);
    for (size_t i = 0; i < t->n; i++) {
        const struct hf_op_def *op = &t->ops[i];
        assert_int_equal(op->codes & request, request);
        assert_false(op->codes & BIT(UNSPECIFIED));
        assert_true(op->codes < (1u << 18)); /* codes 0..17 */
        if (op->flags & HF_OP_RESOURCE) {
            assert_true(op->codes & BIT(OK));
            assert_true(op->codes & BIT(NOT_FOUND)); /* an unknown namespace */
            assert_true(op->codes & BIT(DEADLINE_EXCEEDED));
            assert_false(op->codes & BIT(UNIMPLEMENTED));
        }
    }
    /* Impossible pairs stay out. */
    assert_false(row("hold")->codes & BIT(IDEMPOTENCY_MISMATCH));
    assert_false(row("hold")->codes & BIT(NOT_HELD));
    assert_false(row("release")->codes & BIT(PERMISSION_DENIED));
    assert_false(row("status")->codes & BIT(HELD_BY_ANOTHER));
    assert_false(row("cancel")->codes & BIT(STALE));
    assert_true(row("cancel")->codes & BIT(CONFLICT)); /* claimed under another reference */
    assert_true(row("confirm")->codes & BIT(IDEMPOTENCY_MISMATCH));
    assert_true(row("confirm")->codes & BIT(HOLD_LOST));
    assert_true(row("hold")->codes & BIT(PERMISSION_DENIED));
    /* Health and Metrics answer at once: no deadline, no backend. */
    assert_false(row("health")->codes & BIT(DEADLINE_EXCEEDED));
    assert_false(row("metrics")->codes & BIT(NOT_FOUND));
}

/* Health and Metrics are probes (their log lines are debug by default);
 * nothing else is. */
static void probes_are_flagged(void **state) {
    (void)state;
    const struct hf_op_table *t = hf_ops_table();
    for (size_t i = 0; i < t->n; i++) {
        bool probe = strcmp(t->ops[i].name, "health") == 0 ||
                     strcmp(t->ops[i].name, "metrics") == 0;
        assert_int_equal(!!(t->ops[i].flags & HF_OP_PROBE), probe);
    }
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
        cmocka_unit_test(rows_list_their_codes),
        cmocka_unit_test(probes_are_flagged),
        cmocka_unit_test(duplicates_short_lists),
        cmocka_unit_test(duplicates_long_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
