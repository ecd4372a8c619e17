/* test_log.c - log lines, as written to stderr: a line cut at the length
 * limit is still one line, without the NUL vsnprintf leaves behind; under
 * journald each line starts with its syslog priority. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static bool journal_seen;

static void log_levels(void) {
    journal_seen = hf_log_stderr_is_journal();
    hf_log_set_journal(journal_seen);
    log_debug("d");
    log_info("i");
    log_warn("w");
    log_error("e");
    hf_log_line(HF_LOG_INFO, "raw", 3);
    hf_log_set_journal(false);
}

/* JOURNAL_STREAM names the file stderr goes to (capture's temp file). */
static void journal_stream_of_stderr_gets_priorities(void **state) {
    (void)state;
    hf_log_set_level(HF_LOG_DEBUG);
    /* stderr goes to a temp file, whose device and inode the variable names. */
    struct stat st;
    FILE *probe = tmpfile();
    assert_non_null(probe);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fileno(probe), STDERR_FILENO) >= 0);
    assert_int_equal(fstat(STDERR_FILENO, &st), 0);
    char value[64];
    snprintf(value, sizeof value, "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
    setenv("JOURNAL_STREAM", value, 1);
    log_levels();
    hf_log_flush();
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    assert_true(journal_seen);
    char out[1024] = "";
    rewind(probe);
    size_t len = fread(out, 1, sizeof out - 1, probe);
    fclose(probe);
    out[len] = '\0';
    const char *expect[] = {"<7>", "<6>", "<4>", "<3>", "<6>"};
    const char *line = out;
    for (size_t i = 0; i < 5; i++) {
        assert_non_null(line);
        assert_memory_equal(line, expect[i], 3);
        assert_true(line[3] >= '0' && line[3] <= '9'); /* then the time stamp */
        line = strchr(line, '\n');
        if (line) line++;
    }
    assert_string_equal(line, "");
    unsetenv("JOURNAL_STREAM");
    hf_log_set_level(HF_LOG_INFO);
}

/* Another file (stderr redirected under systemd) or no variable: plain. */
static void other_streams_stay_plain(void **state) {
    (void)state;
    hf_log_set_level(HF_LOG_DEBUG);
    setenv("JOURNAL_STREAM", "1:1", 1);
    size_t len;
    char *out = capture(log_levels, &len);
    assert_false(journal_seen);
    assert_true(out[0] >= '0' && out[0] <= '9');
    assert_null(strstr(out, "<"));
    free(out);
    unsetenv("JOURNAL_STREAM");
    out = capture(log_levels, &len);
    assert_false(journal_seen);
    free(out);
    setenv("JOURNAL_STREAM", "garbage", 1);
    out = capture(log_levels, &len);
    assert_false(journal_seen);
    free(out);
    unsetenv("JOURNAL_STREAM");
    hf_log_set_level(HF_LOG_INFO);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_truncated_line_has_no_nul_and_one_newline),
        cmocka_unit_test(a_long_raw_line_is_cut_too),
        cmocka_unit_test(journal_stream_of_stderr_gets_priorities),
        cmocka_unit_test(other_streams_stay_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
