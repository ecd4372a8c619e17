/* resp.h - a Redis command in RESP (an array of bulk strings), formatted once
 * into one buffer with memcpy and hand-written integers (no printf). The
 * Redis front end formats each command once; the pool and the cluster only
 * send the bytes. No I/O (unit-tested against hiredis's own formatter). */
#ifndef HF_RESP_H
#define HF_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Commands that never change, pre-formatted. */
#define HF_RESP_ASKING "*1\r\n$6\r\nASKING\r\n"

/* A formatted command. Reference-counted, so that a cluster call can keep
 * it for re-sends (MOVED/ASK/TRYAGAIN) without copying it. Read buf, len
 * and tail; write only through the functions below. buf is NUL-terminated
 * (the NUL is not part of len). */
struct hf_resp_cmd {
    unsigned refs;
    bool overflow; /* a write did not fit: the command is incomplete */
    size_t argc;   /* declared by hf_resp_cmd_new */
    size_t nargs;  /* bulk strings written so far */
    size_t len;    /* bytes written */
    size_t cap;    /* bytes available, the header included */
    size_t tail;   /* where the third argument starts (0 until it is reached):
                    * everything after the head "<verb> <name>" */
    char buf[];
};

/* Bytes of "*<argc>\r\n", of one bulk string of `len` bytes, of the bulk
 * string of the decimal `v`. */
size_t hf_resp_header_size(size_t argc);
size_t hf_resp_bulk_size(size_t len);
size_t hf_resp_bulk_u64_size(uint64_t v);

/* A command of `argc` arguments in `size` bytes (the header's included:
 * add up the sizes above); the header is written. NULL when out of memory. */
struct hf_resp_cmd *hf_resp_cmd_new(size_t argc, size_t size);
/* Append one argument. Returns where its bytes went inside buf, or NULL
 * (and the command is marked overflowed) when it does not fit. */
const char *hf_resp_cmd_bulk(struct hf_resp_cmd *cmd, const void *data, size_t len);
const char *hf_resp_cmd_bulk_u64(struct hf_resp_cmd *cmd, uint64_t v);
/* Append `nargs` arguments already formatted as bulk strings (bytes cut
 * from another command), after the head. NULL as hf_resp_cmd_bulk. */
const char *hf_resp_cmd_raw(struct hf_resp_cmd *cmd, const void *data, size_t len, size_t nargs);
/* Every declared argument was written, and nothing overflowed. */
bool hf_resp_cmd_complete(const struct hf_resp_cmd *cmd);

/* A complete command from an argv (argvlen NULL: NUL-terminated strings).
 * NULL when out of memory or argc < 0. */
struct hf_resp_cmd *hf_resp_cmd_argv(int argc, const char *const *argv, const size_t *argvlen);

/* The same command with its first two arguments replaced (FCALL hf1_hold
 * -> EVAL <body>); the tail's bytes are copied as they are. cmd must be
 * complete with argc >= 2. A new command (refs 1); cmd is unchanged. NULL
 * when out of memory or cmd has no such head. */
struct hf_resp_cmd *hf_resp_cmd_replace_head(const struct hf_resp_cmd *cmd, const char *arg0,
                                             size_t len0, const char *arg1, size_t len1);

struct hf_resp_cmd *hf_resp_cmd_ref(struct hf_resp_cmd *cmd);
/* NULL is a no-op. */
void hf_resp_cmd_unref(struct hf_resp_cmd *cmd);

/* Format argv into dst (for a buffer on the stack). Returns the length of
 * the command; dst holds it, NUL-terminated, only when that length is less
 * than cap (as snprintf). argc >= 0; argvlen NULL: NUL-terminated strings. */
size_t hf_resp_format_argv(char *dst, size_t cap, int argc, const char *const *argv,
                           const size_t *argvlen);

#endif
