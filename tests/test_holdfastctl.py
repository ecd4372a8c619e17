"""holdfastctl's command line and exit statuses, against a real daemon:
strict durations with units, help, usage errors that name the argument, and
an exit status per outcome (holdfastctl(1), `holdfastctl help`):

  0 ok, 1 the daemon answered another code, 2 no answer,
  3 degraded best_effort answer (nothing held), 64 usage error.
"""
import os
import signal
import subprocess

import pytest

import harness

OK, NOT_OK, UNREACHABLE, DEGRADED, USAGE = 0, 1, 2, 3, 64
DURATION_HINT = "is not a duration (use 500, 500ms, 30s or 2m)"
OUT_OF_RANGE = "is out of range (1ms to 4294967295ms)"


def ctl(*args, input=None, env=None):
    """holdfastctl with a clean environment: no HOLDFAST_TOKEN or
    HOLDFAST_SOCKET from the caller's shell unless given."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("HOLDFAST_")}
    base.update(env or {})
    return subprocess.run([harness.HOLDFASTCTL] + list(args), capture_output=True, text=True,
                          input=input, env=base, timeout=30)


def on(daemon, *args, **kw):
    return ctl("--socket", daemon.socket, *args, **kw)


def fields(stdout):
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


def hold(daemon, partition, *ids, ttl=None):
    r = on(daemon, "hold", "seat", partition, *ids, *(["--ttl", ttl] if ttl else []))
    assert r.returncode == OK, r.stdout + r.stderr
    token = fields(r.stdout)["token"]
    harness.ISSUED_TOKENS.add(token)
    return token, r


def requests_seen(daemon):
    """Requests the daemon counted, other than health (wait_ready's)."""
    with harness.Client(daemon.socket) as c:
        m = harness.parse_metrics(c.metrics())
    return sum(v for k, v in m.items()
               if k.startswith("holdfast_requests_total{") and 'op="health"' not in k
               and 'op="metrics"' not in k)


# --- numbers --------------------------------------------------------------

BAD_NUMBERS = [
    ("abc", DURATION_HINT),
    ("-5", DURATION_HINT),
    ("60x", DURATION_HINT),
    ("", DURATION_HINT),
    ("1.5s", DURATION_HINT),
    (" 5", DURATION_HINT),
    ("+5", DURATION_HINT),
    ("99999999999999999999", OUT_OF_RANGE),
    ("4294967296", OUT_OF_RANGE),
    ("71583m", OUT_OF_RANGE),
    ("0", OUT_OF_RANGE),
]


@pytest.mark.parametrize("value,why", BAD_NUMBERS)
def test_every_duration_is_parsed_strictly(daemon, value, why):
    cases = [
        ("--ttl", ["hold", "seat", "n", "A1", "--ttl", value]),
        ("--ttl", ["extend", "seat", "n", "A1", "--token", "1.AAAAAAAAAAAAAAAAAAAAAA",
                   "--ttl=" + value]),
        ("--timeout", ["--timeout", value, "hold", "seat", "n", "A1"]),
        ("--timeout", ["health", "-t", value]),
    ]
    for option, args in cases:
        r = on(daemon, *args)
        assert r.returncode == USAGE, (args, r)
        assert r.stderr == "holdfastctl: %s: '%s' %s\n" % (option, value, why), args
        assert r.stdout == ""
    # Refused before anything was sent.
    assert requests_seen(daemon) == 0


@pytest.mark.parametrize("value,ms", [("500", 500), ("500ms", 500), ("30s", 30000),
                                      ("2m", 120000), ("60s", 60000), ("0100", 100)])
def test_duration_units_reach_the_daemon(daemon, value, ms):
    token, r = hold(daemon, "units-" + value, "A1", ttl=value)
    assert fields(r.stdout)["ttl_ms"] == str(ms)
    # A hold long enough to outlive a slow (valgrind) build, extended by the value.
    token, r = hold(daemon, "units-" + value, "A2", ttl="60s")
    r = on(daemon, "extend", "seat", "units-" + value, "A2", "--token-stdin", "--ttl", value,
           "--timeout", "3s", input=token + "\n")
    assert r.returncode == OK and fields(r.stdout)["ttl_ms"] == str(ms), r


def test_ttl_outside_the_namespace_is_the_daemons_answer(daemon):
    # 20m is a well-formed duration above seat's max_ttl_ms: exit 1, not 64.
    r = on(daemon, "hold", "seat", "big", "A1", "--ttl", "20m")
    assert r.returncode == NOT_OK, r
    assert fields(r.stdout)["code"] == "INVALID_ARGUMENT" and "token=" not in r.stdout


# --- help, version, unknown things ----------------------------------------

def test_help_lists_commands_durations_and_exit_statuses():
    r = ctl("help")
    assert r.returncode == OK and r.stderr == ""
    for text in ("hold ", "extend ", "release ", "status ", "confirm ", "cancel ", "health ",
                 "library ", "metrics ", "check-config FILE", "help [COMMAND]",
                 "a bare number is milliseconds", "--version", "--token-stdin"):
        assert text in r.stdout, text
    for code in ("0", "1", "2", "3", "64"):
        assert "\n  %-3s " % code in r.stdout, code
    assert ctl("--help").stdout == r.stdout
    assert ctl("-h").stdout == r.stdout
    # With no command at all: the same text, on stderr, as a usage error.
    bare = ctl()
    assert bare.returncode == USAGE and bare.stdout == "" and bare.stderr == r.stdout


@pytest.mark.parametrize("cmd", ["hold", "extend", "release", "status", "confirm", "cancel",
                                 "health", "library", "metrics", "check-config", "help"])
def test_per_command_help(cmd):
    r = ctl(cmd, "--help")
    assert r.returncode == OK and r.stderr == "", r
    if cmd == "help":  # help's own usage is all of it
        assert r.stdout == ctl("help").stdout
    else:
        assert r.stdout.startswith("usage: holdfastctl ")
        assert (" %s" % cmd) in r.stdout.split("\n")[0]
    assert ctl("help", cmd).stdout == r.stdout
    # --help wins over missing arguments and bad values, anywhere on the line.
    assert ctl("--help", cmd).stdout == r.stdout


def test_hold_help_names_its_options():
    r = ctl("hold", "--ttl", "nonsense", "-h")
    assert r.returncode == OK
    assert "--ttl DURATION" in r.stdout and "default_ttl_ms" in r.stdout
    assert "--key" not in r.stdout


def test_version_matches_the_daemon():
    r = ctl("--version")
    assert r.returncode == OK and r.stderr == ""
    d = subprocess.run([harness.HOLDFASTD, "--version"], capture_output=True, text=True)
    version = r.stdout.split()[-1]
    assert r.stdout == "holdfastctl %s\n" % version
    assert version in d.stdout + d.stderr


@pytest.mark.parametrize("args,message", [
    (["frobnicate"], "holdfastctl: unknown command 'frobnicate' (see holdfastctl help)"),
    (["help", "frobnicate"], "holdfastctl: unknown command 'frobnicate' (see holdfastctl help)"),
    (["health", "--bogus"], "holdfastctl: unknown option '--bogus' (see holdfastctl help)"),
    (["--bogus=1", "health"], "holdfastctl: unknown option '--bogus' (see holdfastctl help)"),
    (["-x", "health"], "holdfastctl: unknown option '-x' (see holdfastctl help)"),
    (["health", "--time", "5"], "holdfastctl: unknown option '--time' (see holdfastctl help)"),
    (["health", "--ttl", "5"],
     "holdfastctl: --ttl does not apply to health (see holdfastctl health --help)"),
    (["hold", "seat", "p", "A1", "--token-stdin"],
     "holdfastctl: --token-stdin does not apply to hold (see holdfastctl hold --help)"),
    (["hold", "seat", "p", "A1", "--ttl", "1s", "--ttl", "2s"], "holdfastctl: --ttl given twice"),
    (["hold", "seat", "p", "A1", "--ttl"], "holdfastctl: --ttl needs DURATION"),
    (["hold", "seat", "p"],
     "holdfastctl hold: needs NAMESPACE PARTITION ID... (see holdfastctl hold --help)"),
    (["health", "now"], "holdfastctl health: takes no arguments (see holdfastctl health --help)"),
    (["confirm", "seat", "p", "A1", "--token", "1.AAAAAAAAAAAAAAAAAAAAAA"],
     "holdfastctl confirm: needs --key IDEMPOTENCY-KEY (see holdfastctl confirm --help)"),
    (["release", "seat", "p", "A1"],
     "holdfastctl release: needs a token (--token-stdin, HOLDFAST_TOKEN or --token)"),
    (["check-config"],
     "holdfastctl check-config: needs FILE (see holdfastctl check-config --help)"),
])
def test_usage_errors_name_the_argument(daemon, args, message):
    r = on(daemon, *args)
    assert (r.returncode, r.stderr, r.stdout) == (USAGE, message + "\n", ""), r
    assert requests_seen(daemon) == 0


def test_ids_after_double_dash_may_start_with_a_dash(daemon):
    token, r = hold(daemon, "dash", "--", "-A1", "--ttl")
    r = on(daemon, "status", "seat", "dash", "--", "-A1", "--ttl")
    assert r.returncode == OK
    assert "-A1 state=held" in r.stdout and "--ttl state=held" in r.stdout


# --- tokens ---------------------------------------------------------------

@pytest.mark.parametrize("stdin", ["", "\n", "  \r\n", "\nthe-token-on-line-2\n"])
def test_empty_token_stdin_is_a_usage_error(daemon, stdin):
    for cmd in (["release", "seat", "p", "A1"], ["status", "seat", "p", "A1"],
                ["extend", "seat", "p", "A1"]):
        r = on(daemon, *cmd, "--token-stdin", input=stdin)
        assert r.returncode == USAGE, r
        assert r.stderr == "holdfastctl: --token-stdin: no token on standard input\n"
        assert r.stdout == ""
    assert requests_seen(daemon) == 0


def test_a_token_is_printed_only_on_the_hold_token_line(daemon):
    token, r = hold(daemon, "secret", "A1", "A2", ttl="1m")
    lines = r.stdout.splitlines()
    assert [line for line in lines if token in line] == ["token=" + token]
    assert token not in r.stderr
    outputs = [
        on(daemon, "status", "seat", "secret", "A1", "--token-stdin", input=token + "\n"),
        on(daemon, "status", "seat", "secret", "A1", env={"HOLDFAST_TOKEN": token}),
        on(daemon, "extend", "seat", "secret", "A1", "A2", "--token", token, "--ttl", "30s"),
        # Answers that are not OK, with the token in the request.
        on(daemon, "release", "seat", "secret", "B9", "--token-stdin", input=token + "\n"),
        on(daemon, "extend", "seat", "secret", "B9", "--token-stdin", input=token + "\n"),
        on(daemon, "hold", "seat", "secret", "A1"),
        # Usage errors around a token: the value is never echoed.
        on(daemon, "release", "seat", "secret", "A1", "--tokn=" + token),
        on(daemon, "release", "seat", "secret", "A1", "--token", token, "--token-stdin",
           input=token + "\n"),
        on(daemon, "release", "seat", "secret", "A1", "--token", token, "--ttl", "x"),
    ]
    for out in outputs:
        assert token not in out.stdout and token not in out.stderr, out
        assert token.split(".", 1)[1] not in out.stdout + out.stderr
    assert [o.returncode for o in outputs] == [OK, OK, OK, NOT_OK, NOT_OK, NOT_OK,
                                               USAGE, USAGE, USAGE]
    r = on(daemon, "release", "seat", "secret", "A1", "A2", env={"HOLDFAST_TOKEN": token})
    assert r.returncode == OK and "released=2" in r.stdout and token not in r.stdout


# --- the daemon's answers -------------------------------------------------

def test_unreachable_socket_exits_2(workdir):
    r = ctl("--socket", workdir + "/none.sock", "hold", "seat", "p", "A1")
    assert r.returncode == UNREACHABLE and "cannot connect" in r.stderr and r.stdout == ""
    r = ctl("health", env={"HOLDFAST_SOCKET": workdir + "/none.sock"})
    assert r.returncode == UNREACHABLE and workdir + "/none.sock" in r.stderr


def test_paused_daemon_is_no_answer(daemon):
    daemon.signal(signal.SIGSTOP)
    try:
        r = on(daemon, "health", "--timeout", "200ms")
    finally:
        daemon.signal(signal.SIGCONT)
    assert r.returncode == UNREACHABLE and "no answer before the deadline" in r.stderr


def test_held_by_another_and_not_held_exit_1(daemon):
    token, _ = hold(daemon, "taken", "A1")
    r = on(daemon, "hold", "seat", "taken", "A1")
    assert r.returncode == NOT_OK
    f = fields(r.stdout)
    assert f["code"] == "HELD_BY_ANOTHER" and f["resource_id"] == "A1" and "token" not in f
    r = on(daemon, "release", "seat", "taken", "Z9", "--token-stdin", input=token + "\n")
    assert r.returncode == NOT_OK and fields(r.stdout)["code"] == "NOT_HELD", r
    r = on(daemon, "release", "seat", "taken", "A1", "--token-stdin", input=token + "\n")
    assert r.returncode == OK


def test_degraded_best_effort_exits_3_without_a_token(daemon, redis):
    redis.stop()
    r = on(daemon, "hold", "product-modify", "10001", "edit", "--timeout", "1500ms")
    assert r.returncode == DEGRADED, r
    f = fields(r.stdout)
    assert f["code"] == "OK" and f["degraded"] == "true" and "token" not in f
    assert "token=" not in r.stdout
    assert r.stderr.startswith("holdfastctl: warning: degraded answer, nothing was held")
    assert "nothing is held (best_effort)" in r.stderr
    # The shell idiom cannot take it for a grant.
    script = 'TOKEN=$("$0" --socket "$1" hold product-modify 10001 edit --timeout 1500ms) ' \
             '|| exit $?; echo "granted $TOKEN"'
    sh = subprocess.run(["sh", "-c", script, harness.HOLDFASTCTL, daemon.socket],
                        capture_output=True, text=True, timeout=30)
    assert sh.returncode == DEGRADED and "granted" not in sh.stdout
    # Extend and release degrade the same way.
    fake = "1.AAAAAAAAAAAAAAAAAAAAAA"
    for cmd in ("extend", "release"):
        r = on(daemon, cmd, "product-modify", "10001", "edit", "--token-stdin",
               "--timeout", "1500ms", input=fake + "\n")
        assert r.returncode == DEGRADED and "degraded=true" in r.stdout, r
    # A fail_closed namespace answers UNAVAILABLE meanwhile: exit 1.
    r = on(daemon, "hold", "seat", "x", "1", "--timeout", "1500ms")
    assert r.returncode == NOT_OK and fields(r.stdout)["code"] == "UNAVAILABLE"
    assert "degraded" not in r.stdout
    assert on(daemon, "health").returncode == NOT_OK
    redis.start()
    daemon.wait_ready()
    r = on(daemon, "hold", "product-modify", "10001", "edit")
    assert r.returncode == OK and fields(r.stdout)["token"], r
    harness.ISSUED_TOKENS.add(fields(r.stdout)["token"])


def test_check_config_passes_holdfastd_status_through(daemon, workdir):
    r = on(daemon, "check-config", daemon.config)
    assert r.returncode == OK and "ok" in r.stdout
    bad = os.path.join(workdir, "bad.lua")
    with open(bad, "w") as f:
        f.write("return { nonsense = true }\n")
    r = on(daemon, "check-config", bad)
    assert r.returncode == 1 and r.stderr
