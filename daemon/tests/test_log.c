/* test_log.c - log lines, as written to stderr: a line cut at the length
 * limit is still one line, without the NUL vsnprintf leaves behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* Run fn with stderr going to a temp file; return what was written. */
static char *capture(void (*fn)(void), size_t *len) {
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    fn();
    hf_log_flush();
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    long size = ftell(tmp) >= 0 ? (fseek(tmp, 0, SEEK_END), ftell(tmp)) : 0;
    rewind(tmp);
    char *out = calloc(1, (size_t)size + 1);
    assert_non_null(out);
    *len = fread(out, 1, (size_t)size, tmp);
    fclose(tmp);
    return out;
}

static void log_huge(void) {
    static char big[20000];
    memset(big, 'x', sizeof big - 1);
    log_warn("big: %s", big);
    log_info("after");
}

static void a_truncated_line_has_no_nul_and_one_newline(void **state) {
    (void)state;
    hf_log_set_level(HF_LOG_INFO);
    size_t len;
    char *out = capture(log_huge, &len);
    assert_null(memchr(out, '\0', len));
    char *first_nl = memchr(out, '\n', len);
    assert_non_null(first_nl);
    assert_true(first_nl - out < 8192); /* cut at the line limit */
    assert_non_null(strstr(first_nl + 1, " info  after\n"));
    free(out);
}

static void log_raw(void) {
    static char big[20000];
    memset(big, 'y', sizeof big);
    hf_log_line(HF_LOG_INFO, big, sizeof big);
}

static void a_long_raw_line_is_cut_too(void **state) {
    (void)state;
    size_t len;
    char *out = capture(log_raw, &len);
    assert_null(memchr(out, '\0', len));
    assert_true(len <= 8192 && out[len - 1] == '\n');
    assert_ptr_equal(memchr(out, '\n', len), out + len - 1);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_truncated_line_has_no_nul_and_one_newline),
        cmocka_unit_test(a_long_raw_line_is_cut_too),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
