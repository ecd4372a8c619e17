/* resp.c - RESP commands built with memcpy and hand-written integers. */
#include "resp.h"

#include <stdlib.h>
#include <string.h>

static size_t u64_digits(uint64_t v) {
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Decimal v at p (n = its digit count); returns the byte after it. */
static char *put_u64(char *p, uint64_t v, size_t n) {
    char *end = p + n;
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p + n;
}

/* "<c><v>\r\n" */
static char *put_line(char *p, char c, uint64_t v, size_t digits) {
    *p++ = c;
    p = put_u64(p, v, digits);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

size_t hf_resp_header_size(size_t argc) { return 1 + u64_digits(argc) + 2; }

size_t hf_resp_bulk_size(size_t len) { return 1 + u64_digits(len) + 2 + len + 2; }

size_t hf_resp_bulk_u64_size(uint64_t v) { return hf_resp_bulk_size(u64_digits(v)); }

struct hf_resp_cmd *hf_resp_cmd_new(size_t argc, size_t size) {
    if (size > SIZE_MAX - sizeof(struct hf_resp_cmd) - 1) return NULL;
    struct hf_resp_cmd *cmd = malloc(sizeof *cmd + size + 1);
    if (!cmd) return NULL;
    *cmd = (struct hf_resp_cmd){.refs = 1, .argc = argc, .cap = size};
    size_t need = hf_resp_header_size(argc);
    if (need > size) {
        cmd->overflow = true;
        cmd->buf[0] = '\0';
        return cmd;
    }
    cmd->len = (size_t)(put_line(cmd->buf, '*', argc, need - 3) - cmd->buf);
    cmd->buf[cmd->len] = '\0';
    return cmd;
}

/* Counts the argument and notes where the tail starts. */
static void wrote_arg(struct hf_resp_cmd *cmd) {
    if (++cmd->nargs == 2) cmd->tail = cmd->len;
}

const char *hf_resp_cmd_bulk(struct hf_resp_cmd *cmd, const void *data, size_t len) {
    size_t digits = u64_digits(len), room = cmd->cap - cmd->len;
    if (cmd->overflow || cmd->nargs >= cmd->argc || len > room || 1 + digits + 4 > room - len) {
        cmd->overflow = true;
        return NULL;
    }
    char *p = put_line(cmd->buf + cmd->len, '$', len, digits);
    char *at = p;
    if (len) memcpy(p, data, len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
    *p = '\0';
    cmd->len = (size_t)(p - cmd->buf);
    wrote_arg(cmd);
    return at;
}

const char *hf_resp_cmd_bulk_u64(struct hf_resp_cmd *cmd, uint64_t v) {
    char digits[20];
    size_t n = u64_digits(v);
    put_u64(digits, v, n);
    return hf_resp_cmd_bulk(cmd, digits, n);
}

const char *hf_resp_cmd_raw(struct hf_resp_cmd *cmd, const void *data, size_t len, size_t nargs) {
    if (cmd->overflow || cmd->nargs < 2 || nargs > cmd->argc - cmd->nargs ||
        len > cmd->cap - cmd->len) {
        cmd->overflow = true;
        return NULL;
    }
    char *at = cmd->buf + cmd->len;
    if (len) memcpy(at, data, len);
    cmd->len += len;
    cmd->buf[cmd->len] = '\0';
    cmd->nargs += nargs;
    return at;
}

bool hf_resp_cmd_complete(const struct hf_resp_cmd *cmd) {
    return !cmd->overflow && cmd->nargs == cmd->argc;
}

static size_t arg_len(const char *const *argv, const size_t *argvlen, int i) {
    return argvlen ? argvlen[i] : strlen(argv[i]);
}

size_t hf_resp_format_argv(char *dst, size_t cap, int argc, const char *const *argv,
                           const size_t *argvlen) {
    size_t n = argc > 0 ? (size_t)argc : 0;
    size_t need = hf_resp_header_size(n);
    for (size_t i = 0; i < n; i++) need += hf_resp_bulk_size(arg_len(argv, argvlen, (int)i));
    if (need >= cap) return need;
    char *p = put_line(dst, '*', n, u64_digits(n));
    for (size_t i = 0; i < n; i++) {
        size_t len = arg_len(argv, argvlen, (int)i);
        p = put_line(p, '$', len, u64_digits(len));
        if (len) memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    *p = '\0';
    return need;
}

struct hf_resp_cmd *hf_resp_cmd_argv(int argc, const char *const *argv, const size_t *argvlen) {
    if (argc < 0) return NULL;
    size_t size = hf_resp_header_size((size_t)argc);
    for (int i = 0; i < argc; i++) size += hf_resp_bulk_size(arg_len(argv, argvlen, i));
    struct hf_resp_cmd *cmd = hf_resp_cmd_new((size_t)argc, size);
    if (!cmd) return NULL;
    for (int i = 0; i < argc; i++) hf_resp_cmd_bulk(cmd, argv[i], arg_len(argv, argvlen, i));
    return cmd; /* complete: sized exactly above */
}

struct hf_resp_cmd *hf_resp_cmd_replace_head(const struct hf_resp_cmd *cmd, const char *arg0,
                                             size_t len0, const char *arg1, size_t len1) {
    if (!hf_resp_cmd_complete(cmd) || cmd->argc < 2) return NULL;
    size_t tail_len = cmd->len - cmd->tail;
    size_t size = hf_resp_header_size(cmd->argc) + hf_resp_bulk_size(len0) +
                  hf_resp_bulk_size(len1) + tail_len;
    struct hf_resp_cmd *out = hf_resp_cmd_new(cmd->argc, size);
    if (!out) return NULL;
    hf_resp_cmd_bulk(out, arg0, len0);
    hf_resp_cmd_bulk(out, arg1, len1);
    /* The tail is already RESP: its bytes go over as they are. */
    memcpy(out->buf + out->len, cmd->buf + cmd->tail, tail_len);
    out->len += tail_len;
    out->buf[out->len] = '\0';
    out->nargs = cmd->nargs;
    return out;
}

struct hf_resp_cmd *hf_resp_cmd_ref(struct hf_resp_cmd *cmd) {
    cmd->refs++;
    return cmd;
}

void hf_resp_cmd_unref(struct hf_resp_cmd *cmd) {
    if (cmd && --cmd->refs == 0) free(cmd);
}
