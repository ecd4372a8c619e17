/* holdfastctl's command line: commands, options, strict numbers, help text
 * and exit statuses. No I/O with the daemon here, so it is unit-tested
 * (daemon/tests/test_ctl_args.c) without one. */
#ifndef HF_CTL_ARGS_H
#define HF_CTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, as documented in `holdfastctl help` and holdfastctl(1).
 * 2 keeps its old meaning, "no answer": liveness probes test for it. */
enum {
    HF_CTL_EXIT_OK = 0,          /* success; health: ready */
    HF_CTL_EXIT_NOT_OK = 1,      /* the daemon answered another code; health: not ready */
    HF_CTL_EXIT_UNREACHABLE = 2, /* no answer: connect failed, connection lost, deadline */
    HF_CTL_EXIT_DEGRADED = 3,    /* OK but degraded (best_effort, Redis down): nothing done */
    HF_CTL_EXIT_USAGE = 64,      /* bad command, option or value (sysexits' EX_USAGE) */
};

enum hf_ctl_cmd {
    HF_CTL_NONE,
    HF_CTL_HOLD,
    HF_CTL_EXTEND,
    HF_CTL_RELEASE,
    HF_CTL_STATUS,
    HF_CTL_CONFIRM,
    HF_CTL_CANCEL,
    HF_CTL_HEALTH,
    HF_CTL_LIBRARY,
    HF_CTL_METRICS,
    HF_CTL_CHECK_CONFIG,
    HF_CTL_HELP,
    HF_CTL_SET_CAPACITY, /* pools (docs/pools.md) */
    HF_CTL_GET_CAPACITY,
};

/* Token requirement of a command. */
enum hf_ctl_token_use { HF_CTL_TOKEN_NONE, HF_CTL_TOKEN_OPTIONAL, HF_CTL_TOKEN_REQUIRED };

#define HF_CTL_DEFAULT_TIMEOUT_MS 5000u

struct hf_ctl_args {
    enum hf_ctl_cmd cmd;        /* HF_CTL_NONE: nothing asked for (no arguments) */
    const char *cmd_name;       /* as typed, NULL with HF_CTL_NONE */
    bool help;                  /* print the usage of cmd (HF_CTL_NONE: all of it) */
    bool version;               /* print the version */
    const char *socket_path;    /* NULL: not given */
    uint32_t timeout_ms;        /* HF_CTL_DEFAULT_TIMEOUT_MS unless given */
    uint32_t ttl_ms;            /* 0: not given, the namespace's default */
    const char *token;          /* --token, NULL: not given */
    bool token_stdin;
    const char *key;
    const char *reference;
    const char *correlation_id;
    char **args;                /* arguments after the command */
    int n_args;
    char **owned;               /* freed by hf_ctl_args_free */
    /* Pools: the resource arguments (after NAMESPACE PARTITION) are pools,
     * POOL=COUNT (or, for extend/release/status, POOL). */
    bool pools;
    char **pool_names;          /* n_args - 2 of them, owned */
    uint32_t *pool_counts;      /* 0: no count given */
    /* set-capacity */
    bool partition_default;     /* --default: the partition's default */
    uint64_t capacity;
};

/* Units a command may name per pool, and the largest capacity. */
#define HF_CTL_MAX_UNITS 1000000u
#define HF_CTL_MAX_CAPACITY 1000000000000ull

/* Parses argv (argv[0] is the program's name) into *a. Returns 0, or
 * HF_CTL_EXIT_USAGE with a one-line message in err that names the wrong
 * argument ("holdfastctl: --ttl: '60x' is not a duration ..."). With
 * --help or --version the command's arguments and values are not checked,
 * but unknown options still are. Free with hf_ctl_args_free. */
int hf_ctl_parse(int argc, char **argv, struct hf_ctl_args *a, char *err, size_t errlen);
void hf_ctl_args_free(struct hf_ctl_args *a);

/* A duration in milliseconds: digits, then nothing or ms (milliseconds), s
 * (seconds) or m (minutes); no sign, no spaces, 1 to UINT32_MAX ms.
 * Returns 0, or -1 with a message naming option and text in err. */
int hf_ctl_parse_duration(const char *option, const char *text, uint32_t *ms, char *err,
                          size_t errlen);

/* "POOL=COUNT" (count 1..HF_CTL_MAX_UNITS), or "POOL" when !need_count:
 * the pool's name into name[0..n-1] and the count (0 when none) into *count.
 * Returns 0 or -1 with a message naming cmd and text in err. Pool names
 * are checked by the daemon. */
int hf_ctl_parse_units(const char *cmd, const char *text, bool need_count, char *name, size_t n,
                       uint32_t *count, char *err, size_t errlen);

/* Whether cmd takes no token, may take one, or needs one. */
enum hf_ctl_token_use hf_ctl_token_use(enum hf_ctl_cmd cmd);

/* Reads a token from the first line of in, without its line end and
 * surrounding blanks. Returns 0, -1 when there is none (EOF or an empty
 * line), -2 when the line is longer than n - 1 bytes. */
int hf_ctl_read_token(FILE *in, char *buf, size_t n);

/* The usage text: all of it for HF_CTL_NONE or HF_CTL_HELP, else one
 * command's. */
void hf_ctl_usage(FILE *out, enum hf_ctl_cmd cmd);

#endif
