/* Unit tests for resp.c: byte for byte what hiredis's redisFormatCommandArgv
 * makes of the same argv, and the head rewrite FCALL -> EVAL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "resp.h"

/* hiredis's bytes for argv, compared with all three ways resp.c builds. */
static void check_argv(int argc, const char **argv, const size_t *argvlen) {
    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, argc, argv, argvlen);
    assert_true(want_len >= 0);

    struct hf_resp_cmd *cmd = hf_resp_cmd_argv(argc, argv, argvlen);
    assert_non_null(cmd);
    assert_true(hf_resp_cmd_complete(cmd));
    assert_int_equal(cmd->len, (size_t)want_len);
    assert_int_equal(cmd->len, cmd->cap); /* sized exactly */
    assert_memory_equal(cmd->buf, want, (size_t)want_len);
    assert_int_equal(cmd->buf[cmd->len], '\0');
    hf_resp_cmd_unref(cmd);

    /* Piece by piece, sized by the size functions. */
    size_t size = hf_resp_header_size((size_t)argc);
    for (int i = 0; i < argc; i++)
        size += hf_resp_bulk_size(argvlen ? argvlen[i] : strlen(argv[i]));
    cmd = hf_resp_cmd_new((size_t)argc, size);
    assert_non_null(cmd);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        const char *at = hf_resp_cmd_bulk(cmd, argv[i], len);
        assert_non_null(at);
        assert_memory_equal(at, argv[i], len);
    }
    assert_true(hf_resp_cmd_complete(cmd));
    assert_int_equal(cmd->len, (size_t)want_len);
    assert_memory_equal(cmd->buf, want, (size_t)want_len);
    hf_resp_cmd_unref(cmd);

    /* Into a caller's buffer: too small (nothing promised), exact + NUL. */
    size_t need = hf_resp_format_argv(NULL, 0, argc, argv, argvlen);
    assert_int_equal(need, (size_t)want_len);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    assert_int_equal(hf_resp_format_argv(buf, need, argc, argv, argvlen), need);
    assert_int_equal(hf_resp_format_argv(buf, need + 1, argc, argv, argvlen), need);
    assert_memory_equal(buf, want, need);
    assert_int_equal(buf[need], '\0');
    free(buf);

    redisFreeCommand(want);
}

static void matches_hiredis_plain(void **state) {
    (void)state;
    const char *get[] = {"GET", "hf:{seat:run-1}:12"};
    check_argv(2, get, NULL);
    const char *delex[] = {"DELEX", "hf:{seat:run-1}:12", "IFEQ", "1712345678901234.abcdef"};
    check_argv(4, delex, NULL);
    const char *one[] = {"ASKING"};
    check_argv(1, one, NULL);
    check_argv(0, NULL, NULL);
}

static void matches_hiredis_empty_and_binary(void **state) {
    (void)state;
    const char *empty[] = {"SET", "", ""};
    check_argv(3, empty, NULL);
    /* NUL, CR, LF, '$', '*' and high bytes inside arguments. */
    static const char bin1[] = {'\0', '\r', '\n', '$', '*', '\xff', '\x80', '\0'};
    static const char bin2[] = "\r\n\r\n";
    const char *argv[] = {"SET", bin1, bin2, ""};
    size_t lens[] = {3, sizeof bin1, 4, 0};
    check_argv(4, argv, lens);
}

static void matches_hiredis_lengths_and_counts(void **state) {
    (void)state;
    /* Lengths on every digit boundary, up to a megabyte. */
    static const size_t lens[] = {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 9999, 10000,
                                  65535, 65536, 99999, 100000, 1048576};
    char *big = malloc(1048576);
    assert_non_null(big);
    for (size_t i = 0; i < 1048576; i++) big[i] = (char)(i * 131 + 7);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        const char *argv[] = {"FUNCTION", "LOAD", big};
        size_t argvlen[] = {8, 4, lens[i]};
        check_argv(3, argv, argvlen);
    }
    /* Argument counts on digit boundaries (the header). */
    static const int counts[] = {9, 10, 11, 99, 100, 101, 1000};
    const char **argv = malloc(1000 * sizeof *argv);
    size_t *argvlen = malloc(1000 * sizeof *argvlen);
    assert_non_null(argv);
    assert_non_null(argvlen);
    for (int i = 0; i < 1000; i++) {
        argv[i] = big + i;
        argvlen[i] = (size_t)(i % 23);
    }
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_argv(counts[i], argv, argvlen);
    free(argv);
    free(argvlen);
    free(big);
}

static void integers(void **state) {
    (void)state;
    static const uint64_t values[] = {0, 1, 9, 10, 64, 99, 100, 12345, 4294967295u,
                                      4294967296u, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char text[32];
        size_t n = 0;
        uint64_t v = values[i];
        char rev[32];
        do {
            rev[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        for (size_t j = 0; j < n; j++) text[j] = rev[n - 1 - j];
        text[n] = '\0';
        const char *argv[] = {"X", text};
        char *want = NULL;
        int want_len = redisFormatCommandArgv(&want, 2, argv, NULL);
        struct hf_resp_cmd *cmd =
            hf_resp_cmd_new(2, hf_resp_header_size(2) + hf_resp_bulk_size(1) +
                                   hf_resp_bulk_u64_size(values[i]));
        assert_non_null(hf_resp_cmd_bulk(cmd, "X", 1));
        assert_non_null(hf_resp_cmd_bulk_u64(cmd, values[i]));
        assert_true(hf_resp_cmd_complete(cmd));
        assert_int_equal(cmd->len, (size_t)want_len);
        assert_memory_equal(cmd->buf, want, cmd->len);
        hf_resp_cmd_unref(cmd);
        redisFreeCommand(want);
    }
}

static void overflow_and_incomplete(void **state) {
    (void)state;
    /* One byte short: the last argument is refused, the command marked. */
    size_t size = hf_resp_header_size(2) + hf_resp_bulk_size(3) + hf_resp_bulk_size(5);
    struct hf_resp_cmd *cmd = hf_resp_cmd_new(2, size - 1);
    assert_non_null(hf_resp_cmd_bulk(cmd, "GET", 3));
    assert_null(hf_resp_cmd_bulk(cmd, "hello", 5));
    assert_false(hf_resp_cmd_complete(cmd));
    assert_true(cmd->len <= cmd->cap);
    hf_resp_cmd_unref(cmd);
    /* Fewer arguments than declared; more than declared. */
    cmd = hf_resp_cmd_new(3, size + 100);
    assert_non_null(hf_resp_cmd_bulk(cmd, "GET", 3));
    assert_non_null(hf_resp_cmd_bulk(cmd, "hello", 5));
    assert_false(hf_resp_cmd_complete(cmd));
    assert_non_null(hf_resp_cmd_bulk(cmd, "", 0));
    assert_true(hf_resp_cmd_complete(cmd));
    assert_null(hf_resp_cmd_bulk(cmd, "x", 1));
    assert_false(hf_resp_cmd_complete(cmd));
    hf_resp_cmd_unref(cmd);
    /* Not even room for the header. */
    cmd = hf_resp_cmd_new(2, 3);
    assert_non_null(cmd);
    assert_false(hf_resp_cmd_complete(cmd));
    assert_null(hf_resp_cmd_bulk(cmd, "", 0));
    hf_resp_cmd_unref(cmd);
    hf_resp_cmd_unref(NULL);
}

/* FCALL hf1_hold 2 k1 k2 a1 a2 -> EVAL <body> 2 k1 k2 a1 a2, as hiredis
 * would format the EVAL argv, with the keys where they were. */
static void head_rewrite(void **state) {
    (void)state;
    static const char key_bin[] = {'h', 'f', '\0', '\r', '\n'};
    const char *fcall[] = {"FCALL", "hf1_hold", "2", "hf:{seat:r}:1", key_bin, "tok", ""};
    size_t lens[] = {5, 8, 1, 13, sizeof key_bin, 3, 0};
    struct hf_resp_cmd *cmd =
        hf_resp_cmd_new(7, hf_resp_header_size(7) + hf_resp_bulk_size(5) + hf_resp_bulk_size(8) +
                               hf_resp_bulk_u64_size(2) + hf_resp_bulk_size(13) +
                               hf_resp_bulk_size(sizeof key_bin) + hf_resp_bulk_size(3) +
                               hf_resp_bulk_size(0));
    hf_resp_cmd_bulk(cmd, "FCALL", 5);
    hf_resp_cmd_bulk(cmd, "hf1_hold", 8);
    size_t tail = cmd->len;
    hf_resp_cmd_bulk_u64(cmd, 2);
    const char *key = hf_resp_cmd_bulk(cmd, fcall[3], lens[3]);
    for (int i = 4; i < 7; i++) hf_resp_cmd_bulk(cmd, fcall[i], lens[i]);
    assert_true(hf_resp_cmd_complete(cmd));
    assert_int_equal(cmd->tail, tail);
    size_t key_at = (size_t)(key - (cmd->buf + cmd->tail));

    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, 7, fcall, lens);
    assert_int_equal(cmd->len, (size_t)want_len);
    assert_memory_equal(cmd->buf, want, cmd->len);
    redisFreeCommand(want);

    /* A body long enough to move the tail, with bytes RESP cares about. */
    size_t body_len = 70000;
    char *body = malloc(body_len);
    assert_non_null(body);
    for (size_t i = 0; i < body_len; i++) body[i] = "local x = 1\r\n$*\0"[i % 16];
    struct hf_resp_cmd *eval = hf_resp_cmd_replace_head(cmd, "EVAL", 4, body, body_len);
    assert_non_null(eval);
    assert_true(hf_resp_cmd_complete(eval));
    assert_int_equal(eval->refs, 1);
    const char *eval_argv[] = {"EVAL", body, "2", "hf:{seat:r}:1", key_bin, "tok", ""};
    size_t eval_lens[] = {4, body_len, 1, 13, sizeof key_bin, 3, 0};
    want_len = redisFormatCommandArgv(&want, 7, eval_argv, eval_lens);
    assert_int_equal(eval->len, (size_t)want_len);
    assert_memory_equal(eval->buf, want, eval->len);
    assert_int_equal(eval->buf[eval->len], '\0');
    redisFreeCommand(want);
    /* The tail is the same bytes, so a key found by offset stays found. */
    assert_int_equal(eval->len - eval->tail, cmd->len - cmd->tail);
    assert_memory_equal(eval->buf + eval->tail + key_at, "hf:{seat:r}:1", 13);
    /* The original is untouched (the cluster may still hold it). */
    assert_memory_equal(cmd->buf, "*7\r\n$5\r\nFCALL\r\n", 15);

    /* And back again, to a shorter head. */
    struct hf_resp_cmd *back = hf_resp_cmd_replace_head(eval, "FCALL", 5, "hf1_hold", 8);
    assert_int_equal(back->len, cmd->len);
    assert_memory_equal(back->buf, cmd->buf, cmd->len);

    /* A reference keeps the command alive past its creator's unref. */
    struct hf_resp_cmd *held = hf_resp_cmd_ref(back);
    hf_resp_cmd_unref(back);
    assert_int_equal(held->refs, 1);
    hf_resp_cmd_unref(held);
    hf_resp_cmd_unref(eval);
    free(body);

    /* No head to replace: fewer than two arguments, or incomplete. */
    const char *one[] = {"PING"};
    struct hf_resp_cmd *ping = hf_resp_cmd_argv(1, one, NULL);
    assert_null(hf_resp_cmd_replace_head(ping, "A", 1, "B", 1));
    hf_resp_cmd_unref(ping);
    struct hf_resp_cmd *partial = hf_resp_cmd_new(3, 100);
    hf_resp_cmd_bulk(partial, "A", 1);
    hf_resp_cmd_bulk(partial, "B", 1);
    assert_null(hf_resp_cmd_replace_head(partial, "C", 1, "D", 1));
    hf_resp_cmd_unref(partial);
    hf_resp_cmd_unref(cmd);
}

/* A two-argument command: the tail is empty, the rewrite still works. */
static void head_rewrite_without_tail(void **state) {
    (void)state;
    const char *argv[] = {"GET", "k"};
    struct hf_resp_cmd *cmd = hf_resp_cmd_argv(2, argv, NULL);
    assert_int_equal(cmd->tail, cmd->len);
    struct hf_resp_cmd *out = hf_resp_cmd_replace_head(cmd, "STRLEN", 6, "key", 3);
    const char *want_argv[] = {"STRLEN", "key"};
    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, 2, want_argv, NULL);
    assert_int_equal(out->len, (size_t)want_len);
    assert_memory_equal(out->buf, want, out->len);
    redisFreeCommand(want);
    hf_resp_cmd_unref(out);
    hf_resp_cmd_unref(cmd);
}

/* Arguments cut from one command and appended raw to another (how calls
 * join a batch): the same bytes hiredis makes of the joined argv. */
static void raw_arguments(void **state) {
    (void)state;
    const char *one[] = {"FCALL", "hf1_hold", "2", "hf:{seat:r}:#fence", "hf:{seat:r}:1", "abc", "60000"};
    struct hf_resp_cmd *a = hf_resp_cmd_argv(7, one, NULL);
    assert_non_null(a);
    /* The two keys: from the tail past the key count. */
    const char *keys = a->buf + a->tail + hf_resp_bulk_u64_size(2);
    size_t keys_len = hf_resp_bulk_size(18) + hf_resp_bulk_size(13);
    const char *joined[] = {"FCALL", "hf1_batch", "2", "hf:{seat:r}:#fence", "hf:{seat:r}:1", "1"};
    size_t size = hf_resp_header_size(6) + hf_resp_bulk_size(5) + hf_resp_bulk_size(9) +
                  hf_resp_bulk_u64_size(2) + keys_len + hf_resp_bulk_u64_size(1);
    struct hf_resp_cmd *b = hf_resp_cmd_new(6, size);
    assert_null(hf_resp_cmd_raw(b, keys, keys_len, 2)); /* not before the head */
    hf_resp_cmd_unref(b);
    b = hf_resp_cmd_new(6, size);
    hf_resp_cmd_bulk(b, "FCALL", 5);
    hf_resp_cmd_bulk(b, "hf1_batch", 9);
    hf_resp_cmd_bulk_u64(b, 2);
    assert_non_null(hf_resp_cmd_raw(b, keys, keys_len, 2));
    assert_false(hf_resp_cmd_complete(b));
    hf_resp_cmd_bulk_u64(b, 1);
    assert_true(hf_resp_cmd_complete(b));
    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, 6, joined, NULL);
    assert_int_equal(b->len, (size_t)want_len);
    assert_memory_equal(b->buf, want, b->len);
    redisFreeCommand(want);
    /* More arguments than declared, or more bytes than sized: refused. */
    assert_null(hf_resp_cmd_raw(b, keys, keys_len, 1));
    assert_true(b->overflow);
    hf_resp_cmd_unref(b);
    hf_resp_cmd_unref(a);
}

static void asking_constant(void **state) {
    (void)state;
    const char *argv[] = {"ASKING"};
    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, 1, argv, NULL);
    assert_int_equal(strlen(HF_RESP_ASKING), (size_t)want_len);
    assert_memory_equal(HF_RESP_ASKING, want, (size_t)want_len);
    redisFreeCommand(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_hiredis_plain),
        cmocka_unit_test(matches_hiredis_empty_and_binary),
        cmocka_unit_test(matches_hiredis_lengths_and_counts),
        cmocka_unit_test(integers),
        cmocka_unit_test(overflow_and_incomplete),
        cmocka_unit_test(head_rewrite),
        cmocka_unit_test(head_rewrite_without_tail),
        cmocka_unit_test(raw_arguments),
        cmocka_unit_test(asking_constant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
