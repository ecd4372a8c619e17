/* Unit tests for confirm_db.c: what a SQLSTATE means to Confirm and Cancel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "confirm_db.h"

static void deadlines(void **state) {
    (void)state;
    assert_int_equal(hf_sqlstate_classify("55P03"), HF_SQLSTATE_DEADLINE); /* lock_timeout */
    assert_int_equal(hf_sqlstate_classify("57014"), HF_SQLSTATE_DEADLINE); /* statement_timeout */
}

static void retryable_classes(void **state) {
    (void)state;
    const char *codes[] = {"40001", "40P01", "53300", "53200", "55006", "55000",
                           "57P01", "57P03", "58030", "08006", "08000"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_int_equal(hf_sqlstate_classify(codes[i]), HF_SQLSTATE_RETRYABLE);
}

static void schema(void **state) {
    (void)state;
    const char *codes[] = {"42883", "3F000", "42P01", "42501"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_int_equal(hf_sqlstate_classify(codes[i]), HF_SQLSTATE_SCHEMA);
}

static void other(void **state) {
    (void)state;
    /* Neighbours of the exact codes stay OTHER: the 42 and 3F classes are
     * not taken whole. */
    const char *codes[] = {"23505", "22P02", "42601", "42P02", "3F001", "P0001", "XX000",
                           "00000", "54000", "41000"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_int_equal(hf_sqlstate_classify(codes[i]), HF_SQLSTATE_OTHER);
}

static void malformed(void **state) {
    (void)state;
    assert_int_equal(hf_sqlstate_classify(NULL), HF_SQLSTATE_OTHER);
    assert_int_equal(hf_sqlstate_classify(""), HF_SQLSTATE_OTHER);
    assert_int_equal(hf_sqlstate_classify("40"), HF_SQLSTATE_OTHER);     /* a class alone */
    assert_int_equal(hf_sqlstate_classify("5701"), HF_SQLSTATE_OTHER);
    assert_int_equal(hf_sqlstate_classify("570144"), HF_SQLSTATE_OTHER);
    assert_int_equal(hf_sqlstate_classify("3f000"), HF_SQLSTATE_OTHER);  /* SQLSTATEs are upper case */
}

/* A traceparent rides in front of the statement as a comment. */
static void traced_sql(void **state) {
    (void)state;
    char buf[128];
    const char *sql = "SELECT holdfast.confirm($1)";
    assert_ptr_equal(hf_sql_traced("", sql, buf, sizeof buf), sql);
    assert_ptr_equal(hf_sql_traced(NULL, sql, buf, sizeof buf), sql);
    assert_string_equal(
        hf_sql_traced("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", sql, buf,
                      sizeof buf),
        "/* traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' */ "
        "SELECT holdfast.confirm($1)");
    /* No room: the statement without the comment, never a cut one. */
    assert_ptr_equal(
        hf_sql_traced("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", sql, buf, 64),
        sql);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deadlines), cmocka_unit_test(retryable_classes), cmocka_unit_test(schema),
        cmocka_unit_test(other),     cmocka_unit_test(malformed),
        cmocka_unit_test(traced_sql),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
