/* holdfastctl's command line; see ctl_args.h.
 *
 * The parser is ours rather than getopt_long's: options are matched by their
 * whole name (no abbreviations that a later option would make ambiguous),
 * an unknown option is reported by its name without its value (a mistyped
 * --token=... must not echo the token), each option may be given once, and
 * an option a command does not use is refused instead of ignored. Options
 * may come before or after the command; "--" ends them. */
#include "ctl_args.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
    O_SOCKET = 1u << 0,
    O_TIMEOUT = 1u << 1,
    O_CORRELATION = 1u << 2,
    O_HELP = 1u << 3,
    O_VERSION = 1u << 4,
    O_TTL = 1u << 5,
    O_TOKEN = 1u << 6,
    O_TOKEN_STDIN = 1u << 7,
    O_KEY = 1u << 8,
    O_REFERENCE = 1u << 9,
    O_POOLS = 1u << 10,
    O_DEFAULT = 1u << 11,
};
/* Every command takes these, so a wrapper may always pass --socket; the
 * ones that do not talk to a daemon ignore them. */
#define O_DAEMON (O_HELP | O_VERSION | O_SOCKET | O_TIMEOUT | O_CORRELATION)
#define O_TOKENS (O_TOKEN | O_TOKEN_STDIN)

struct option_def {
    const char *name;
    char short_name; /* 0: none */
    unsigned bit;
    const char *metavar; /* NULL: takes no value */
};

static const struct option_def option_defs[] = {
    {"socket", 's', O_SOCKET, "PATH"},
    {"timeout", 't', O_TIMEOUT, "DURATION"},
    {"correlation-id", 0, O_CORRELATION, "ID"},
    {"ttl", 0, O_TTL, "DURATION"},
    {"token", 0, O_TOKEN, "TOKEN"},
    {"token-stdin", 0, O_TOKEN_STDIN, NULL},
    {"key", 0, O_KEY, "IDEMPOTENCY-KEY"},
    {"reference", 0, O_REFERENCE, "REF"},
    {"pools", 0, O_POOLS, NULL},
    {"default", 0, O_DEFAULT, NULL},
    {"help", 'h', O_HELP, NULL},
    {"version", 0, O_VERSION, NULL},
};
#define N_OPTIONS (sizeof option_defs / sizeof option_defs[0])

struct command_def {
    const char *name;
    enum hf_ctl_cmd cmd;
    unsigned opts;
    int min_args, max_args; /* max -1: no limit */
    enum hf_ctl_token_use token;
    const char *synopsis; /* after the command's name */
    const char *summary;  /* in the command list, after a short synopsis */
    const char *details;  /* in the command's own usage */
};

#define RESOURCES "NAMESPACE PARTITION ID..."
/* The lines every resource command's usage ends with. */
#define UNITS_HELP                                                                          \
    "On a namespace of kind pools the arguments after PARTITION are units,\n"               \
    "POOL=COUNT (e.g. adult=2 child=1), instead of IDs.\n"
#define POOLS_HELP                                                                          \
    "On a namespace of kind pools the arguments after PARTITION are the hold's\n"           \
    "pools: POOL or POOL=COUNT (the count is not used), or bare names with --pools.\n"      \
    "  --pools               the arguments name pools, not IDs\n"

static const struct command_def command_defs[] = {
    {"hold", HF_CTL_HOLD, O_DAEMON | O_TTL, 3, -1, HF_CTL_TOKEN_NONE,
     RESOURCES " [--ttl DURATION]", NULL,
     "Take a hold on every ID of the partition, all or none. Prints token=, fence=\n"
     "and ttl_ms=. The token line is the only place holdfastctl ever prints a\n"
     "token; a degraded answer (exit status 3) has none:\n"
     "  TOKEN=$(holdfastctl hold seat run-1 E7 E8 | sed -n 's/^token=//p')\n"
     "  --ttl DURATION        how long the hold lasts (default: the namespace's\n"
     "                        default_ttl_ms)\n" UNITS_HELP},
    {"extend", HF_CTL_EXTEND, O_DAEMON | O_TTL | O_TOKENS | O_POOLS, 3, -1,
     HF_CTL_TOKEN_REQUIRED, RESOURCES " TOKEN-OPTION [--ttl DURATION]", NULL,
     "Give the token's hold on every ID a new TTL, counted from now. Prints ttl_ms=.\n"
     "  --ttl DURATION        the new TTL (default: the namespace's default_ttl_ms)\n"
     POOLS_HELP},
    {"release", HF_CTL_RELEASE, O_DAEMON | O_TOKENS | O_POOLS, 3, -1, HF_CTL_TOKEN_REQUIRED,
     RESOURCES " TOKEN-OPTION", NULL,
     "Give the token's hold on every ID back. Prints released=, how many of the IDs\n"
     "(of a pool hold: units) the token held.\n" POOLS_HELP},
    {"status", HF_CTL_STATUS, O_DAEMON | O_TOKENS | O_POOLS, 3, -1, HF_CTL_TOKEN_OPTIONAL,
     RESOURCES " [TOKEN-OPTION]", NULL,
     "Print one line per ID: ID state=free|held|confirmed ttl_ms=N owned=true|false;\n"
     "owned= tells whether the given token holds it. A diagnostic view, never\n"
     "permission for anything. For pools, one line per pool:\n"
     "POOL capacity=N sold=N held=N free=N owned=UNITS ttl_ms=N.\n" POOLS_HELP},
    {"confirm", HF_CTL_CONFIRM, O_DAEMON | O_TOKENS | O_KEY | O_REFERENCE, 3, -1,
     HF_CTL_TOKEN_REQUIRED, RESOURCES " TOKEN-OPTION --key IDEMPOTENCY-KEY [--reference REF]",
     NULL,
     "Turn the token's hold on every ID into a durable claim in PostgreSQL. Prints\n"
     "fence=, replayed= and one claim= line per ID; the same key again answers\n"
     "replayed=true.\n"
     "  --key IDEMPOTENCY-KEY the caller's key for this confirm, kept across retries\n"
     "  --reference REF       stored with the claims (e.g. an order number)\n"
     UNITS_HELP "For units: exactly those the token holds; prints units=POOL=COUNT lines.\n"},
    {"cancel", HF_CTL_CANCEL, O_DAEMON | O_KEY | O_REFERENCE, 3, -1, HF_CTL_TOKEN_NONE,
     RESOURCES " --key IDEMPOTENCY-KEY [--reference REF]", NULL,
     "Remove the confirmed claims on the IDs so they can be sold again. Prints\n"
     "cancelled= and replayed=.\n"
     "  --key IDEMPOTENCY-KEY the caller's key for this cancel, kept across retries\n"
     "  --reference REF       recorded with the cancel\n"
     UNITS_HELP "For units: COUNT of the units sold under --reference go back to POOL.\n"},
    {"set-capacity", HF_CTL_SET_CAPACITY, O_DAEMON | O_DEFAULT, 3, 4, HF_CTL_TOKEN_NONE,
     "NAMESPACE PARTITION POOL|--default CAPACITY", NULL,
     "Set the capacity of POOL (units it may sell in total, sold ones included) in\n"
     "PostgreSQL; raising or lowering it, never below what is sold. Prints pool=,\n"
     "capacity=, sold= and partition_default=.\n"
     "  --default             set the partition's default instead: the capacity of every\n"
     "                        pool without its own (e.g. 1 for one pool per user)\n"
     "CAPACITY: 0 to 1000000000000.\n"},
    {"get-capacity", HF_CTL_GET_CAPACITY, O_DAEMON, 2, -1, HF_CTL_TOKEN_NONE,
     "NAMESPACE PARTITION [POOL...]", NULL,
     "Print default_capacity= and one line per POOL: POOL capacity=N sold=N\n"
     "partition_default=true|false, as PostgreSQL has them (and refresh the Redis\n"
     "mirror with it).\n"},
    {"health", HF_CTL_HEALTH, O_DAEMON, 0, 0, HF_CTL_TOKEN_NONE, "",
     "liveness, readiness and backends",
     "Print live=, ready=, version=, redis=, postgres=, script_path=, release_path=,\n"
     "library=, connections=, in_flight= and draining=.\n"
     "Exit status 0 when ready, 1 when the daemon answers but is not ready (backends\n"
     "down, starting, draining), 2 when it does not answer: only 2 means the daemon\n"
     "is gone or wedged (a liveness probe), anything but 0 means not ready.\n"},
    {"library", HF_CTL_LIBRARY, O_DAEMON, 0, 0, HF_CTL_TOKEN_NONE, "",
     "script library, call path and release path",
     "Print library=, script_path= (fcall, evalsha or eval), release_path= (script\n"
     "or delex) and redis=.\n"},
    {"metrics", HF_CTL_METRICS, O_DAEMON, 0, 0, HF_CTL_TOKEN_NONE, "",
     "the daemon's metrics, Prometheus text format",
     "Print the daemon's metrics in the Prometheus text format (0.0.4).\n"},
    {"check-config", HF_CTL_CHECK_CONFIG, O_DAEMON, 1, 1, HF_CTL_TOKEN_NONE, "FILE",
     "validate a configuration file",
     "Validate a configuration file with holdfastd --check-config (the holdfastd\n"
     "next to holdfastctl, else /usr/sbin/holdfastd, else the one on PATH). Does not\n"
     "talk to a daemon: the options for one are accepted and ignored. Exit status\n"
     "0 valid, 1 invalid (holdfastd's own), 2 when holdfastd cannot be run.\n"},
    {"help", HF_CTL_HELP, O_DAEMON, 0, 1, HF_CTL_TOKEN_NONE, "[COMMAND]",
     "this text, or one command's", "Print the usage of every command, or of one.\n"},
};
#define N_COMMANDS (sizeof command_defs / sizeof command_defs[0])

static const struct command_def *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(command_defs[i].name, name) == 0) return &command_defs[i];
    return NULL;
}

static const struct command_def *command_of(enum hf_ctl_cmd cmd) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (command_defs[i].cmd == cmd) return &command_defs[i];
    return NULL;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return HF_CTL_EXIT_USAGE;
}

int hf_ctl_parse_duration(const char *option, const char *text, uint32_t *ms, char *err,
                          size_t errlen) {
    /* strtoull alone would take blanks, a sign and wrap "-5" around. */
    size_t digits = strspn(text, "0123456789");
    const char *unit = text + digits;
    unsigned long long mult = 0;
    if (strcmp(unit, "") == 0 || strcmp(unit, "ms") == 0) mult = 1;
    else if (strcmp(unit, "s") == 0) mult = 1000;
    else if (strcmp(unit, "m") == 0) mult = 60000;
    if (digits == 0 || mult == 0) {
        fail(err, errlen, "holdfastctl: %s: '%s' is not a duration (use 500, 500ms, 30s or 2m)",
             option, text);
        return -1;
    }
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end != unit || errno == ERANGE || v == 0 || v > UINT32_MAX / mult) {
        fail(err, errlen, "holdfastctl: %s: '%s' is out of range (1ms to %lums)", option, text,
             (unsigned long)UINT32_MAX);
        return -1;
    }
    *ms = (uint32_t)(v * mult);
    return 0;
}

int hf_ctl_parse_units(const char *cmd, const char *text, bool need_count, char *name, size_t n,
                       uint32_t *count, char *err, size_t errlen) {
    const char *eq = strchr(text, '=');
    size_t len = eq ? (size_t)(eq - text) : strlen(text);
    *count = 0;
    if (len == 0 || len >= n) {
        fail(err, errlen, "holdfastctl %s: '%s' is not POOL=COUNT", cmd, text);
        return -1;
    }
    memcpy(name, text, len);
    name[len] = '\0';
    if (!eq) {
        if (!need_count) return 0;
        fail(err, errlen, "holdfastctl %s: '%s' needs a count (POOL=COUNT)", cmd, text);
        return -1;
    }
    const char *digits = eq + 1;
    size_t nd = strspn(digits, "0123456789");
    unsigned long long v = 0;
    bool ok = nd > 0 && nd <= 7 && digits[nd] == '\0';
    if (ok) v = strtoull(digits, NULL, 10);
    if (!ok || v == 0 || v > HF_CTL_MAX_UNITS) {
        fail(err, errlen, "holdfastctl %s: '%s': the count must be 1 to %u", cmd, text,
             HF_CTL_MAX_UNITS);
        return -1;
    }
    *count = (uint32_t)v;
    return 0;
}

/* The resource arguments of hold ... status as pools, when they are. */
static int parse_pool_args(const struct command_def *c, struct hf_ctl_args *a, bool forced,
                           char *err, size_t errlen) {
    int n = a->n_args - 2;
    int with_eq = 0;
    for (int i = 0; i < n; i++) with_eq += strchr(a->args[2 + i], '=') != NULL;
    if (!forced && with_eq == 0) return 0;
    bool need_count = c->cmd == HF_CTL_HOLD || c->cmd == HF_CTL_CONFIRM ||
                      c->cmd == HF_CTL_CANCEL;
    a->pools = true;
    a->pool_names = calloc((size_t)n, sizeof *a->pool_names);
    a->pool_counts = calloc((size_t)n, sizeof *a->pool_counts);
    if (!a->pool_names || !a->pool_counts) return fail(err, errlen, "holdfastctl: out of memory");
    for (int i = 0; i < n; i++) {
        const char *text = a->args[2 + i];
        size_t cap = strlen(text) + 1;
        a->pool_names[i] = malloc(cap);
        if (!a->pool_names[i]) return fail(err, errlen, "holdfastctl: out of memory");
        if (hf_ctl_parse_units(c->name, text, need_count, a->pool_names[i], cap,
                               &a->pool_counts[i], err, errlen) != 0)
            return HF_CTL_EXIT_USAGE;
    }
    return 0;
}

static int parse_capacity(const char *text, uint64_t *out, char *err, size_t errlen) {
    size_t nd = strspn(text, "0123456789");
    errno = 0;
    unsigned long long v = nd > 0 && nd <= 13 && text[nd] == '\0' ? strtoull(text, NULL, 10)
                                                                  : ULLONG_MAX;
    if (v > HF_CTL_MAX_CAPACITY)
        return fail(err, errlen,
                    "holdfastctl set-capacity: '%s' is not a capacity (0 to %llu)", text,
                    HF_CTL_MAX_CAPACITY);
    *out = v;
    return 0;
}

enum hf_ctl_token_use hf_ctl_token_use(enum hf_ctl_cmd cmd) {
    const struct command_def *c = command_of(cmd);
    return c ? c->token : HF_CTL_TOKEN_NONE;
}

int hf_ctl_read_token(FILE *in, char *buf, size_t n) {
    if (!fgets(buf, (int)n, in)) return -1;
    size_t len = strlen(buf);
    if (len == n - 1 && buf[len - 1] != '\n') {
        /* A full buffer: the line fits only if it ends right here. */
        int c = getc(in);
        if (c != EOF && c != '\n' && c != '\r') return -2;
    }
    while (len > 0 && strchr(" \t\r\n", buf[len - 1])) buf[--len] = '\0';
    size_t lead = strspn(buf, " \t");
    memmove(buf, buf + lead, len - lead + 1);
    return buf[0] ? 0 : -1;
}

static const struct option_def *find_long(const char *name, size_t len) {
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strlen(option_defs[i].name) == len && memcmp(option_defs[i].name, name, len) == 0)
            return &option_defs[i];
    return NULL;
}

static const struct option_def *find_short(char c) {
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (option_defs[i].short_name && option_defs[i].short_name == c) return &option_defs[i];
    return NULL;
}

struct seen {
    unsigned bits;
    const char *value[N_OPTIONS];
};

static int take(struct seen *s, const struct option_def *o, const char *value, char *err,
                size_t errlen) {
    if (s->bits & o->bit) return fail(err, errlen, "holdfastctl: --%s given twice", o->name);
    /* An empty duration is left to hf_ctl_parse_duration's message. */
    if (o->metavar && !*value && strcmp(o->metavar, "DURATION") != 0)
        return fail(err, errlen, "holdfastctl: --%s: empty %s", o->name, o->metavar);
    s->bits |= o->bit;
    s->value[o - option_defs] = value;
    return 0;
}

static const char *value_of(const struct seen *s, unsigned bit) {
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (option_defs[i].bit == bit) return (s->bits & bit) ? s->value[i] : NULL;
    return NULL;
}

/* One "--name", "--name=value" or "--name value" at argv[*i]. */
static int parse_long(int argc, char **argv, int *i, struct seen *s, char *err, size_t errlen) {
    const char *name = argv[*i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option_def *o = find_long(name, len);
    if (!o)
        return fail(err, errlen, "holdfastctl: unknown option '--%.*s' (see holdfastctl help)",
                    (int)len, name);
    if (!o->metavar) {
        if (eq) return fail(err, errlen, "holdfastctl: --%s takes no value", o->name);
        return take(s, o, "", err, errlen);
    }
    if (eq) return take(s, o, eq + 1, err, errlen);
    if (*i + 1 >= argc) return fail(err, errlen, "holdfastctl: --%s needs %s", o->name, o->metavar);
    return take(s, o, argv[++*i], err, errlen);
}

/* "-h", "-s PATH", "-sPATH", "-ht 500". */
static int parse_short(int argc, char **argv, int *i, struct seen *s, char *err, size_t errlen) {
    const char *p = argv[*i] + 1;
    for (; *p; p++) {
        const struct option_def *o = find_short(*p);
        if (!o)
            return fail(err, errlen, "holdfastctl: unknown option '-%c' (see holdfastctl help)",
                        *p);
        if (!o->metavar) {
            int rc = take(s, o, "", err, errlen);
            if (rc) return rc;
            continue;
        }
        if (p[1]) return take(s, o, p + 1, err, errlen);
        if (*i + 1 >= argc) return fail(err, errlen, "holdfastctl: -%c needs %s", *p, o->metavar);
        return take(s, o, argv[++*i], err, errlen);
    }
    return 0;
}

static int check_options(const struct command_def *c, const struct seen *s, char *err,
                         size_t errlen) {
    unsigned stray = s->bits & ~c->opts;
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (stray & option_defs[i].bit)
            return fail(err, errlen,
                        "holdfastctl: --%s does not apply to %s (see holdfastctl %s --help)",
                        option_defs[i].name, c->name, c->name);
    return 0;
}

int hf_ctl_parse(int argc, char **argv, struct hf_ctl_args *a, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->timeout_ms = HF_CTL_DEFAULT_TIMEOUT_MS;
    err[0] = '\0';
    char **pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof *pos);
    if (!pos) return fail(err, errlen, "holdfastctl: out of memory");
    a->args = a->owned = pos;
    int n_pos = 0;
    struct seen s = {0};
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int rc = 0;
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) pos[n_pos++] = argv[i];
        else if (strcmp(arg, "--") == 0) options_done = true;
        else if (arg[1] == '-') rc = parse_long(argc, argv, &i, &s, err, errlen);
        else rc = parse_short(argc, argv, &i, &s, err, errlen);
        if (rc) return rc;
    }
    a->help = s.bits & O_HELP;
    a->version = s.bits & O_VERSION;
    if (n_pos == 0) return 0; /* no command: the usage, --help or --version */

    const struct command_def *c = find_command(pos[0]);
    if (!c)
        return fail(err, errlen, "holdfastctl: unknown command '%s' (see holdfastctl help)",
                    pos[0]);
    a->cmd = c->cmd;
    a->cmd_name = c->name;
    a->args = pos + 1;
    a->n_args = n_pos - 1;
    int rc = check_options(c, &s, err, errlen);
    if (rc) return rc;
    if (c->cmd == HF_CTL_HELP) {
        /* "help COMMAND" is "COMMAND --help". */
        if (a->n_args > c->max_args)
            return fail(err, errlen, "holdfastctl help: takes at most one COMMAND");
        a->help = true;
        a->cmd = HF_CTL_NONE;
        if (a->n_args == 1) {
            const struct command_def *topic = find_command(a->args[0]);
            if (!topic)
                return fail(err, errlen,
                            "holdfastctl: unknown command '%s' (see holdfastctl help)",
                            a->args[0]);
            a->cmd = topic->cmd;
            a->cmd_name = topic->name;
        }
        return 0;
    }
    if (a->help || a->version) return 0;

    if (a->n_args < c->min_args || (c->max_args >= 0 && a->n_args > c->max_args)) {
        if (c->max_args == 0)
            return fail(err, errlen,
                        "holdfastctl %s: takes no arguments (see holdfastctl %s --help)", c->name,
                        c->name);
        return fail(err, errlen, "holdfastctl %s: needs %s (see holdfastctl %s --help)", c->name,
                    c->min_args == c->max_args || strncmp(c->synopsis, RESOURCES,
                                                          strlen(RESOURCES)) != 0
                        ? c->synopsis
                        : RESOURCES,
                    c->name);
    }
    const char *v;
    if ((v = value_of(&s, O_TIMEOUT)) &&
        hf_ctl_parse_duration("--timeout", v, &a->timeout_ms, err, errlen) != 0)
        return HF_CTL_EXIT_USAGE;
    if ((v = value_of(&s, O_TTL)) &&
        hf_ctl_parse_duration("--ttl", v, &a->ttl_ms, err, errlen) != 0)
        return HF_CTL_EXIT_USAGE;
    a->socket_path = value_of(&s, O_SOCKET);
    a->correlation_id = value_of(&s, O_CORRELATION);
    a->token = value_of(&s, O_TOKEN);
    a->token_stdin = s.bits & O_TOKEN_STDIN;
    a->key = value_of(&s, O_KEY);
    a->reference = value_of(&s, O_REFERENCE);
    if (a->token && a->token_stdin)
        return fail(err, errlen, "holdfastctl: --token and --token-stdin: give one of them");
    if ((c->opts & O_KEY) && !a->key)
        return fail(err, errlen,
                    "holdfastctl %s: needs --key IDEMPOTENCY-KEY (see holdfastctl %s --help)",
                    c->name, c->name);
    switch (c->cmd) {
    case HF_CTL_HOLD:
    case HF_CTL_EXTEND:
    case HF_CTL_RELEASE:
    case HF_CTL_STATUS:
    case HF_CTL_CONFIRM:
    case HF_CTL_CANCEL:
        return parse_pool_args(c, a, s.bits & O_POOLS, err, errlen);
    case HF_CTL_SET_CAPACITY:
        a->partition_default = s.bits & O_DEFAULT;
        if (a->n_args != (a->partition_default ? 3 : 4))
            return fail(err, errlen,
                        "holdfastctl set-capacity: needs NAMESPACE PARTITION POOL CAPACITY, or "
                        "NAMESPACE PARTITION --default CAPACITY");
        return parse_capacity(a->args[a->n_args - 1], &a->capacity, err, errlen);
    default:
        return 0;
    }
}

void hf_ctl_args_free(struct hf_ctl_args *a) {
    for (int i = 0; a->pool_names && i < a->n_args - 2; i++) free(a->pool_names[i]);
    free(a->pool_names);
    free(a->pool_counts);
    a->pool_names = NULL;
    a->pool_counts = NULL;
    free(a->owned);
    a->owned = a->args = NULL;
    a->n_args = 0;
}

static void print_globals(FILE *out) {
    fputs("Options, before or after the command:\n"
          "  -s, --socket PATH       the daemon's socket (default: $HOLDFAST_SOCKET, else\n"
          "                          /run/holdfast/holdfast.sock)\n"
          "  -t, --timeout DURATION  deadline for the answer (default 5s)\n"
          "      --correlation-id ID carried into the daemon's log\n"
          "  -h, --help              this usage; after a command, that command's\n"
          "      --version           print holdfastctl's version\n"
          "DURATION: a bare number is milliseconds (500); or 500ms, 30s, 2m.\n",
          out);
}

static void print_tokens(FILE *out) {
    fputs("TOKEN-OPTION: --token-stdin (the first line of standard input), HOLDFAST_TOKEN\n"
          "  in the environment, or --token TOKEN (other users can read it in ps).\n",
          out);
}

static void print_exit_status(FILE *out) {
    fputs("Exit status:\n"
          "  0   success (health: ready)\n"
          "  1   the daemon answered with another code, printed as code= (health: not ready)\n"
          "  2   no answer: cannot connect, connection lost, the deadline passed, or an\n"
          "      answer that cannot be read\n"
          "  3   degraded: answered OK under best_effort with Redis down; nothing was\n"
          "      held or changed and no token is printed (a warning goes to stderr)\n"
          "  64  usage error: unknown command or option, bad or missing argument\n",
          out);
}

void hf_ctl_usage(FILE *out, enum hf_ctl_cmd cmd) {
    const struct command_def *c = cmd == HF_CTL_HELP ? NULL : command_of(cmd);
    if (c) {
        bool talks = c->cmd != HF_CTL_CHECK_CONFIG && c->cmd != HF_CTL_HELP;
        fprintf(out, "usage: holdfastctl %s%s%s%s\n", talks ? "[OPTIONS] " : "", c->name,
                *c->synopsis ? " " : "", c->synopsis);
        fputs(c->details, out);
        if (c->token != HF_CTL_TOKEN_NONE) print_tokens(out);
        if (talks) {
            print_globals(out);
            print_exit_status(out);
        }
        return;
    }
    fputs("usage: holdfastctl [OPTIONS] COMMAND [ARGUMENT...]\n"
          "       holdfastctl help [COMMAND] | COMMAND --help | --version\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const struct command_def *d = &command_defs[i];
        if (d->summary) {
            char head[64];
            snprintf(head, sizeof head, "%s %s", d->name, d->synopsis);
            fprintf(out, "  %-22s %s\n", head, d->summary);
        } else {
            fprintf(out, "  %-8s %s\n", d->name, d->synopsis);
        }
    }
    print_tokens(out);
    print_globals(out);
    fputs("Output: key=value lines on stdout; errors and warnings on stderr.\n", out);
    print_exit_status(out);
}
