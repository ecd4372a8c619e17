/* Unit tests for holdfastctl's command line (src/ctl/ctl_args.c): strict
 * durations, commands, options, and the message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/ctl_args.h"

static void durations_with_units(void **state) {
    (void)state;
    static const struct {
        const char *text;
        uint32_t ms;
    } good[] = {
        {"500", 500}, {"500ms", 500}, {"30s", 30000}, {"2m", 120000}, {"1", 1},
        {"0500", 500}, {"4294967295", 4294967295u}, {"4294967295ms", 4294967295u},
        {"4294967s", 4294967000u}, {"71582m", 4294920000u},
    };
    char err[256];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint32_t ms = 7;
        assert_int_equal(hf_ctl_parse_duration("--ttl", good[i].text, &ms, err, sizeof err), 0);
        assert_true(ms == good[i].ms);
    }
}

static void bad_durations_name_option_and_text(void **state) {
    (void)state;
    static const char *not_durations[] = {
        "", "abc", "-5", "+5", " 5", "5 ", "60x", "1.5s", "5S", "5MS", "s", "ms", "5sec",
        "5h", "0x10", "5mss", "5 s", "1e3", "\t5",
    };
    char err[256];
    char want[256];
    for (size_t i = 0; i < sizeof not_durations / sizeof not_durations[0]; i++) {
        uint32_t ms = 7;
        assert_int_equal(hf_ctl_parse_duration("--ttl", not_durations[i], &ms, err, sizeof err),
                         -1);
        assert_true(ms == 7);
        snprintf(want, sizeof want,
                 "holdfastctl: --ttl: '%s' is not a duration (use 500, 500ms, 30s or 2m)",
                 not_durations[i]);
        assert_string_equal(err, want);
    }
    static const char *out_of_range[] = {
        "0", "0ms", "0s", "0m", "4294967296", "4294968s", "71583m",
        "99999999999999999999", "18446744073709551616", "18446744073709551615",
        "307445734561825861m", /* wraps to a small number if multiplied unchecked */
    };
    for (size_t i = 0; i < sizeof out_of_range / sizeof out_of_range[0]; i++) {
        uint32_t ms = 7;
        assert_int_equal(
            hf_ctl_parse_duration("--timeout", out_of_range[i], &ms, err, sizeof err), -1);
        assert_true(ms == 7);
        snprintf(want, sizeof want,
                 "holdfastctl: --timeout: '%s' is out of range (1ms to 4294967295ms)",
                 out_of_range[i]);
        assert_string_equal(err, want);
    }
}

/* Parses a NULL-terminated list after "holdfastctl". */
static int parse(struct hf_ctl_args *a, char *err, size_t errlen, ...) {
    char *argv[32] = {"holdfastctl"};
    int argc = 1;
    va_list ap;
    va_start(ap, errlen);
    char *s;
    while ((s = va_arg(ap, char *)) != NULL) argv[argc++] = s;
    va_end(ap);
    static char *keep[32];
    memcpy(keep, argv, sizeof argv); /* a->args points into argv */
    return hf_ctl_parse(argc, keep, a, err, errlen);
}

static void commands_and_options(void **state) {
    (void)state;
    struct hf_ctl_args a;
    char err[256];
    assert_int_equal(parse(&a, err, sizeof err, "--socket", "/s", "hold", "seat", "p", "A1", "A2",
                           "--ttl", "30s", "--correlation-id=c1", "-t", "2m", NULL),
                     0);
    assert_int_equal(a.cmd, HF_CTL_HOLD);
    assert_string_equal(a.cmd_name, "hold");
    assert_string_equal(a.socket_path, "/s");
    assert_string_equal(a.correlation_id, "c1");
    assert_true(a.ttl_ms == 30000 && a.timeout_ms == 120000);
    assert_int_equal(a.n_args, 4);
    assert_string_equal(a.args[0], "seat");
    assert_string_equal(a.args[3], "A2");
    assert_false(a.help || a.version || a.token_stdin);
    hf_ctl_args_free(&a);

    /* Defaults; "--" ends the options so an ID may start with '-'. */
    assert_int_equal(parse(&a, err, sizeof err, "-s/x", "status", "seat", "p", "--", "-1",
                           "--ttl", NULL),
                     0);
    assert_int_equal(a.cmd, HF_CTL_STATUS);
    assert_string_equal(a.socket_path, "/x");
    assert_true(a.timeout_ms == HF_CTL_DEFAULT_TIMEOUT_MS && a.ttl_ms == 0);
    assert_int_equal(a.n_args, 4);
    assert_string_equal(a.args[2], "-1");
    assert_string_equal(a.args[3], "--ttl");
    assert_int_equal(hf_ctl_token_use(a.cmd), HF_CTL_TOKEN_OPTIONAL);
    hf_ctl_args_free(&a);

    assert_int_equal(parse(&a, err, sizeof err, "confirm", "seat", "p", "A", "--token-stdin",
                           "--key", "k1", "--reference", "r", NULL),
                     0);
    assert_true(a.token_stdin && !a.token);
    assert_string_equal(a.key, "k1");
    assert_string_equal(a.reference, "r");
    assert_int_equal(hf_ctl_token_use(a.cmd), HF_CTL_TOKEN_REQUIRED);
    hf_ctl_args_free(&a);

    /* The daemon options are taken everywhere, so a wrapper can always pass
     * --socket; check-config ignores them. */
    assert_int_equal(
        parse(&a, err, sizeof err, "--socket", "/s", "check-config", "/etc/h.lua", NULL), 0);
    assert_int_equal(a.cmd, HF_CTL_CHECK_CONFIG);
    assert_int_equal(a.n_args, 1);
    hf_ctl_args_free(&a);

    /* Nothing at all: no command, for the caller to print the usage. */
    assert_int_equal(parse(&a, err, sizeof err, NULL), 0);
    assert_int_equal(a.cmd, HF_CTL_NONE);
    assert_false(a.help);
    hf_ctl_args_free(&a);
}

/* Pools: POOL=COUNT arguments, --pools, set-capacity and get-capacity. */
static void pools_and_capacity(void **state) {
    (void)state;
    struct hf_ctl_args a;
    char err[256];
    assert_int_equal(parse(&a, err, sizeof err, "hold", "ga", "show", "adult=2", "child=1", NULL),
                     0);
    assert_true(a.pools);
    assert_int_equal(a.n_args, 4);
    assert_string_equal(a.pool_names[0], "adult");
    assert_string_equal(a.pool_names[1], "child");
    assert_true(a.pool_counts[0] == 2 && a.pool_counts[1] == 1);
    hf_ctl_args_free(&a);
    /* Plain ids stay ids. */
    assert_int_equal(parse(&a, err, sizeof err, "hold", "seat", "p", "A1", NULL), 0);
    assert_false(a.pools);
    assert_null(a.pool_names);
    hf_ctl_args_free(&a);
    /* Release, extend and status name pools: POOL=COUNT (count unused) or --pools. */
    assert_int_equal(parse(&a, err, sizeof err, "release", "ga", "show", "adult=2", "child",
                           "--token", "t", NULL),
                     0);
    assert_true(a.pools);
    assert_string_equal(a.pool_names[1], "child");
    assert_true(a.pool_counts[0] == 2 && a.pool_counts[1] == 0);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "status", "ga", "show", "adult", "--pools", NULL),
                     0);
    assert_true(a.pools);
    assert_string_equal(a.pool_names[0], "adult");
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "set-capacity", "ga", "show", "adult", "5000",
                           NULL),
                     0);
    assert_int_equal(a.cmd, HF_CTL_SET_CAPACITY);
    assert_false(a.partition_default);
    assert_true(a.capacity == 5000);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "set-capacity", "coupon", "b7", "--default", "0",
                           NULL),
                     0);
    assert_true(a.partition_default && a.capacity == 0);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "set-capacity", "ga", "s", "p",
                           "1000000000000", NULL),
                     0);
    assert_true(a.capacity == 1000000000000ull);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "get-capacity", "ga", "show", NULL), 0);
    assert_int_equal(a.cmd, HF_CTL_GET_CAPACITY);
    assert_int_equal(a.n_args, 2);
    hf_ctl_args_free(&a);

    uint32_t count;
    char name[16];
    assert_int_equal(hf_ctl_parse_units("hold", "a=1000000", true, name, sizeof name, &count,
                                        err, sizeof err),
                     0);
    assert_true(count == 1000000);
    static const char *bad[] = {"a=0", "a=", "a=1000001", "a=-1", "a=1x", "=2", "a=01234567",
                                "a= 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(hf_ctl_parse_units("hold", bad[i], true, name, sizeof name, &count,
                                            err, sizeof err),
                         -1);
}

static void help_and_version(void **state) {
    (void)state;
    struct hf_ctl_args a;
    char err[256];
    assert_int_equal(parse(&a, err, sizeof err, "help", NULL), 0);
    assert_true(a.help && a.cmd == HF_CTL_NONE);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "help", "extend", NULL), 0);
    assert_true(a.help && a.cmd == HF_CTL_EXTEND);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "--help", NULL), 0);
    assert_true(a.help && a.cmd == HF_CTL_NONE);
    hf_ctl_args_free(&a);
    /* A command's --help skips its arguments and values... */
    assert_int_equal(parse(&a, err, sizeof err, "extend", "--ttl", "x", "-h", NULL), 0);
    assert_true(a.help && a.cmd == HF_CTL_EXTEND);
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "--version", NULL), 0);
    assert_true(a.version);
    hf_ctl_args_free(&a);
    /* ...but not unknown options. */
    assert_int_equal(parse(&a, err, sizeof err, "hold", "--help", "--nope", NULL),
                     HF_CTL_EXIT_USAGE);
    assert_string_equal(err, "holdfastctl: unknown option '--nope' (see holdfastctl help)");
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "help", "nope", NULL), HF_CTL_EXIT_USAGE);
    assert_string_equal(err, "holdfastctl: unknown command 'nope' (see holdfastctl help)");
    hf_ctl_args_free(&a);
    assert_int_equal(parse(&a, err, sizeof err, "help", "hold", "extend", NULL),
                     HF_CTL_EXIT_USAGE);
    hf_ctl_args_free(&a);
}

struct refusal {
    const char *argv[8];
    const char *message;
};

static void usage_errors_name_the_argument(void **state) {
    (void)state;
    static const struct refusal cases[] = {
        {{"nope"}, "holdfastctl: unknown command 'nope' (see holdfastctl help)"},
        {{"--nope", "health"}, "holdfastctl: unknown option '--nope' (see holdfastctl help)"},
        /* The value of a mistyped option is never echoed: it may be a token. */
        {{"health", "--tokn=1.secret"},
         "holdfastctl: unknown option '--tokn' (see holdfastctl help)"},
        {{"-x", "health"}, "holdfastctl: unknown option '-x' (see holdfastctl help)"},
        {{"-hx", "health"}, "holdfastctl: unknown option '-x' (see holdfastctl help)"},
        /* Whole names only: no abbreviations. */
        {{"health", "--time", "5"}, "holdfastctl: unknown option '--time' (see holdfastctl help)"},
        {{"hold", "s", "p", "1", "--ttl", "60x"},
         "holdfastctl: --ttl: '60x' is not a duration (use 500, 500ms, 30s or 2m)"},
        {{"hold", "s", "p", "1", "--ttl", "-5"},
         "holdfastctl: --ttl: '-5' is not a duration (use 500, 500ms, 30s or 2m)"},
        {{"hold", "s", "p", "1", "--ttl="},
         "holdfastctl: --ttl: '' is not a duration (use 500, 500ms, 30s or 2m)"},
        {{"health", "--timeout", "abc"},
         "holdfastctl: --timeout: 'abc' is not a duration (use 500, 500ms, 30s or 2m)"},
        {{"health", "-t", "99999999999999999999"},
         "holdfastctl: --timeout: '99999999999999999999' is out of range (1ms to 4294967295ms)"},
        {{"hold", "s", "p", "1", "--ttl"}, "holdfastctl: --ttl needs DURATION"},
        {{"health", "-s"}, "holdfastctl: -s needs PATH"},
        {{"health", "--socket="}, "holdfastctl: --socket: empty PATH"},
        {{"health", "--token-stdin=x"}, "holdfastctl: --token-stdin takes no value"},
        {{"hold", "s", "p", "1", "--ttl", "1", "--ttl", "2"}, "holdfastctl: --ttl given twice"},
        {{"hold", "s", "p", "1", "--key", "k"},
         "holdfastctl: --key does not apply to hold (see holdfastctl hold --help)"},
        {{"health", "--ttl", "5"},
         "holdfastctl: --ttl does not apply to health (see holdfastctl health --help)"},
        {{"check-config", "f", "--ttl", "5"},
         "holdfastctl: --ttl does not apply to check-config (see holdfastctl check-config --help)"},
        {{"hold", "s", "p"},
         "holdfastctl hold: needs NAMESPACE PARTITION ID... (see holdfastctl hold --help)"},
        {{"health", "extra"},
         "holdfastctl health: takes no arguments (see holdfastctl health --help)"},
        {{"check-config"},
         "holdfastctl check-config: needs FILE (see holdfastctl check-config --help)"},
        {{"check-config", "a", "b"},
         "holdfastctl check-config: needs FILE (see holdfastctl check-config --help)"},
        {{"cancel", "s", "p", "1"},
         "holdfastctl cancel: needs --key IDEMPOTENCY-KEY (see holdfastctl cancel --help)"},
        {{"release", "s", "p", "1", "--token", "t", "--token-stdin"},
         "holdfastctl: --token and --token-stdin: give one of them"},
        {{"hold", "ga", "s", "adult=2", "child"},
         "holdfastctl hold: 'child' needs a count (POOL=COUNT)"},
        {{"hold", "ga", "s", "adult=0"},
         "holdfastctl hold: 'adult=0': the count must be 1 to 1000000"},
        {{"hold", "ga", "s", "adult", "--pools"},
         "holdfastctl: --pools does not apply to hold (see holdfastctl hold --help)"},
        {{"set-capacity", "ga", "s", "adult"},
         "holdfastctl set-capacity: needs NAMESPACE PARTITION POOL CAPACITY, or "
         "NAMESPACE PARTITION --default CAPACITY"},
        {{"set-capacity", "ga", "s", "adult", "5", "--default"},
         "holdfastctl set-capacity: needs NAMESPACE PARTITION POOL CAPACITY, or "
         "NAMESPACE PARTITION --default CAPACITY"},
        {{"set-capacity", "ga", "s", "adult", "1e3"},
         "holdfastctl set-capacity: '1e3' is not a capacity (0 to 1000000000000)"},
        {{"set-capacity", "ga", "s", "adult", "1000000000001"},
         "holdfastctl set-capacity: '1000000000001' is not a capacity (0 to 1000000000000)"},
        {{"get-capacity", "ga"},
         "holdfastctl get-capacity: needs NAMESPACE PARTITION [POOL...] "
         "(see holdfastctl get-capacity --help)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[10] = {"holdfastctl"};
        int argc = 1;
        for (size_t j = 0; j < 8 && cases[i].argv[j]; j++) argv[argc++] = (char *)cases[i].argv[j];
        struct hf_ctl_args a;
        char err[256] = "";
        int rc = hf_ctl_parse(argc, argv, &a, err, sizeof err);
        if (rc != HF_CTL_EXIT_USAGE || strcmp(err, cases[i].message) != 0)
            fail_msg("case %zu (%s ...): rc %d, message \"%s\", want \"%s\"", i, cases[i].argv[0],
                     rc, err, cases[i].message);
        hf_ctl_args_free(&a);
    }
}

static int read_token(const char *input, char *buf, size_t n) {
    FILE *f = fmemopen((void *)input, strlen(input), "r");
    if (!strlen(input)) f = fopen("/dev/null", "r");
    assert_non_null(f);
    int rc = hf_ctl_read_token(f, buf, n);
    fclose(f);
    return rc;
}

static void token_from_stdin(void **state) {
    (void)state;
    char buf[64];
    assert_int_equal(read_token("12.abc\n", buf, sizeof buf), 0);
    assert_string_equal(buf, "12.abc");
    assert_int_equal(read_token("  12.abc \r\nsecond line\n", buf, sizeof buf), 0);
    assert_string_equal(buf, "12.abc");
    assert_int_equal(read_token("12.abc", buf, sizeof buf), 0); /* no line end */
    assert_string_equal(buf, "12.abc");
    assert_int_equal(read_token("", buf, sizeof buf), -1);
    assert_int_equal(read_token("\n", buf, sizeof buf), -1);
    assert_int_equal(read_token(" \t\r\n12.abc\n", buf, sizeof buf), -1);
    char small[8];
    assert_int_equal(read_token("12345678\n", small, sizeof small), -2);
    assert_int_equal(read_token("12345678", small, sizeof small), -2);
    assert_int_equal(read_token("1234567\n", small, sizeof small), 0);
    assert_string_equal(small, "1234567");
    assert_int_equal(read_token("1234567\r\n", small, sizeof small), 0);
    assert_int_equal(read_token("1234567", small, sizeof small), 0);
}

static char *usage_of(enum hf_ctl_cmd cmd) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    hf_ctl_usage(f, cmd);
    fclose(f);
    return text;
}

static void usage_texts(void **state) {
    (void)state;
    char *all = usage_of(HF_CTL_NONE);
    static const char *in_all[] = {
        "\n  hold ", "\n  extend ", "\n  release ", "\n  status ", "\n  confirm ",
        "\n  cancel ", "\n  set-capacity ", "\n  get-capacity ", "\n  health ",
        "\n  library ", "\n  metrics ", "\n  check-config FILE",
        "\n  help [COMMAND]", "a bare number is milliseconds", "\n  0 ", "\n  1 ", "\n  2 ",
        "\n  3 ", "\n  64 ", "--version", "--token-stdin",
    };
    for (size_t i = 0; i < sizeof in_all / sizeof in_all[0]; i++)
        if (!strstr(all, in_all[i])) fail_msg("the usage lacks \"%s\"", in_all[i]);
    free(all);
    char *hold = usage_of(HF_CTL_HOLD);
    assert_non_null(strstr(hold, "usage: holdfastctl [OPTIONS] hold NAMESPACE PARTITION ID..."));
    assert_non_null(strstr(hold, "--ttl DURATION"));
    assert_null(strstr(hold, "TOKEN-OPTION"));
    free(hold);
    char *check = usage_of(HF_CTL_CHECK_CONFIG);
    assert_non_null(strstr(check, "usage: holdfastctl check-config FILE\n"));
    assert_null(strstr(check, "--socket"));
    free(check);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_with_units),
        cmocka_unit_test(bad_durations_name_option_and_text),
        cmocka_unit_test(commands_and_options),
        cmocka_unit_test(pools_and_capacity),
        cmocka_unit_test(help_and_version),
        cmocka_unit_test(usage_errors_name_the_argument),
        cmocka_unit_test(token_from_stdin),
        cmocka_unit_test(usage_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
