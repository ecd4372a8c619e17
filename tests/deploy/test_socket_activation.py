"""The socket-unit path without systemd as PID 1: systemd-socket-activate
(Debian's systemd package) listens, then execs holdfastd with LISTEN_FDS=1
on the first connection, exactly as holdfastd.socket would. A datagram
socket made here plays the service manager for sd_notify."""
import os
import signal
import subprocess

import pytest

from deploy_helpers import DEPLOY, wait_until

# TTLs and namespaces do not matter here; what matters is that the daemon
# never binds this socket.path because it is handed a listening socket.
CONFIG = """\
return {{
  socket = {{ path = "{unused}", mode = "0660" }},
  redis = {{ address = "unix:{redis}" }},
  limits = {{ drain_timeout_ms = 2000 }},
  log = {{ level = "debug" }},
  namespaces = {{
    ["product-modify"] = {{ default_ttl_ms = 5000, on_redis_down = "best_effort" }},
  }},
}}
"""


def _health(ctl, sock):
    return subprocess.run([str(ctl), "--socket", str(sock), "health"],
                          capture_output=True, text=True, timeout=30)


def _hold(ctl, sock, ns):
    return subprocess.run([str(ctl), "--socket", str(sock), "hold", ns, "run-1", "12"],
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def activated_daemon(short_tmp, binaries, redis_server, notify_socket):
    config = short_tmp / "holdfast.lua"
    unused = short_tmp / "not-bound.sock"
    config.write_text(CONFIG.format(unused=unused, redis=redis_server))
    listen = short_tmp / "holdfast.sock"
    log = open(short_tmp / "holdfastd.log", "w")
    proc = subprocess.Popen(
        ["systemd-socket-activate", "--listen", str(listen),
         # systemd-socket-activate passes only the variables named here.
         "-E", f"NOTIFY_SOCKET={notify_socket.path}",
         "-E", "WATCHDOG_USEC=1000000",
         str(binaries["holdfastd"]), "--config", str(config)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: listen.exists() or proc.poll() is not None, 20,
                   "systemd-socket-activate to listen")
        assert proc.poll() is None, (short_tmp / "holdfastd.log").read_text()
        yield {"proc": proc, "socket": listen, "config": config, "unused": unused,
               "log": short_tmp / "holdfastd.log", "notify": notify_socket}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def test_socket_activation_and_notify_lifecycle(activated_daemon, binaries):
    d = activated_daemon
    proc, notify, ctl = d["proc"], d["notify"], binaries["holdfastctl"]

    # The first connection makes systemd-socket-activate exec the daemon
    # (same pid). It may answer "not ready" (exit 1) until Redis is loaded.
    first = _health(ctl, d["socket"])
    assert first.returncode in (0, 1), first.stdout + first.stderr
    pid, ready = notify.wait_for("READY", "1")
    assert pid == proc.pid, "READY=1 must come from the main process"
    ok = wait_until(lambda: _health(ctl, d["socket"]).returncode == 0, 30,
                    "holdfastctl health to report ready")
    assert ok
    assert not d["unused"].exists(), \
        "the daemon bound socket.path although systemd handed it a socket"

    # Watchdog pings when WATCHDOG_USEC is set.
    pid, _ = notify.wait_for("WATCHDOG", "1")
    assert pid == proc.pid

    # SIGHUP: RELOADING=1 with the monotonic timestamp notify-reload needs,
    # then READY=1 again, and the new namespace is served.
    before = _hold(ctl, d["socket"], "seat")
    assert before.returncode == 1 and "NOT_FOUND" in before.stdout, before.stdout
    d["config"].write_text(d["config"].read_text().replace(
        "namespaces = {", 'namespaces = {\n    seat = { default_ttl_ms = 5000 },'))
    proc.send_signal(signal.SIGHUP)
    _, reloading = notify.wait_for("RELOADING", "1")
    assert int(reloading.get("MONOTONIC_USEC", "0")) > 0, reloading
    notify.wait_for("READY", "1")
    after = _hold(ctl, d["socket"], "seat")
    # stdout holds the token on success: report only stderr.
    assert after.returncode == 0, after.stderr
    health = _health(ctl, d["socket"])
    assert health.returncode == 0, health.stdout + health.stderr

    # SIGTERM: STOPPING=1, then a clean exit once drained.
    proc.send_signal(signal.SIGTERM)
    pid, _ = notify.wait_for("STOPPING", "1")
    assert pid == proc.pid
    assert proc.wait(30) == 0, d["log"].read_text()


def _textfile(binaries, sock, out_dir):
    """deploy/metrics-textfile.sh as the timer and the k8s container run it:
    holdfastctl from PATH, the socket from HOLDFAST_SOCKET."""
    env = {"PATH": f"{binaries['holdfastctl'].parent}:/usr/bin:/bin",
           "HOLDFAST_SOCKET": str(sock)}
    return subprocess.run([str(DEPLOY / "metrics-textfile.sh"), str(out_dir)],
                          capture_output=True, text=True, env=env, timeout=60)


def test_metrics_through_inherited_socket(activated_daemon, binaries, short_tmp):
    d = activated_daemon
    ctl = binaries["holdfastctl"]
    _health(ctl, d["socket"])
    d["notify"].wait_for("READY", "1")
    out = subprocess.run([str(ctl), "--socket", str(d["socket"]), "metrics"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "# TYPE holdfast_requests_total counter" in out.stdout

    # The textfile-collector export: a complete file, no leftover .tmp.
    prom_dir = short_tmp / "textfile"
    prom_dir.mkdir()
    written = _textfile(binaries, d["socket"], prom_dir)
    assert written.returncode == 0, written.stderr
    assert "# TYPE holdfast_requests_total counter" in (prom_dir / "holdfast.prom").read_text()
    assert sorted(p.name for p in prom_dir.iterdir()) == ["holdfast.prom"]
    # The health call and this one were accepted on the inherited socket.
    accepted = [line.split()[1] for line in out.stdout.splitlines()
                if line.startswith("holdfast_connections_accepted_total ")]
    assert accepted and int(accepted[0]) >= 2, out.stdout
    d["proc"].send_signal(signal.SIGTERM)
    assert d["proc"].wait(30) == 0, d["log"].read_text()
    # The socket file belongs to the service manager: a daemon that unlinked
    # it on exit would leave holdfastd.socket listening on a path nobody
    # can reach any more.
    assert os.path.exists(d["socket"])

    # With the daemon gone the export removes the file rather than leave
    # stale numbers behind.
    gone = _textfile(binaries, d["socket"], prom_dir)
    assert gone.returncode != 0
    assert list(prom_dir.iterdir()) == []
