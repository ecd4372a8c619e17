"""loop.busy_poll_us (busy_poll.c): after taking a request or writing answers
the loop keeps polling instead of sleeping for that long. Requests are served
as without it; the loop polls while requests come closer together than the
window, and sleeps again once they stop. CPU time is read from
/proc/<pid>/stat: the daemon's use of it is the behaviour under test, not its
speed."""
import os
import signal
import time

from harness import Client, code_name, pb

UNDER_VALGRIND = "valgrind" in os.environ.get("HOLDFASTD_WRAPPER", "")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_daemon(make_daemon, us):
    return make_daemon(top_extra="loop = { busy_poll_us = %d }," % us)


def spaced_requests(d, seconds, gap=0.0003):
    """Status requests one at a time, `gap` apart (shorter than the window),
    for `seconds`: (the daemon's CPU seconds, wall seconds)."""
    with Client(d.socket) as c:
        c.status("seat", "bp", ["warm"])
        cpu0, t0 = cpu_seconds(d.proc.pid), time.monotonic()
        while time.monotonic() - t0 < seconds:
            assert code_name(c.status("seat", "bp", ["s1"]).code) == "OK"
            time.sleep(gap)
        return cpu_seconds(d.proc.pid) - cpu0, time.monotonic() - t0


def test_holds_and_releases_are_served_as_without_it(make_daemon):
    d = busy_daemon(make_daemon, 200)
    with Client(d.socket) as c:
        fences = []
        for i in range(100):
            r = c.hold("seat", "bp", ["s%d" % i], ttl_ms=30000)
            assert code_name(r.code) == "OK", r.message
            fences.append(int(r.hold.fence))
            r = c.release("seat", "bp", ["s%d" % i], r.hold.token)
            assert code_name(r.code) == "OK" and r.release.released == 1
        assert fences == sorted(fences) and len(set(fences)) == len(fences)
        # Pipelined: 32 at once, every answer to its request.
        ids = [c.send(hold=pb().HoldRequest(namespace="seat", partition="bp", ids=["p%d" % i],
                                            ttl_ms=30000)) for i in range(32)]
        answers = [c.recv() for _ in ids]
        assert sorted(r.id for r in answers) == sorted(ids)
        assert all(code_name(r.code) == "OK" for r in answers)
        taken = c.hold("seat", "bp", ["p0"])
        assert code_name(taken.code) == "HELD_BY_ANOTHER"


def test_the_loop_polls_while_requests_come_and_sleeps_when_they_stop(make_daemon):
    d = busy_daemon(make_daemon, 1000)
    cpu, wall = spaced_requests(d, 1.5)
    if not UNDER_VALGRIND:  # valgrind keeps a core busy by itself
        # Never more than the window apart: the loop never slept.
        assert cpu >= 0.5 * wall, "daemon CPU %.2fs in %.2fs of requests" % (cpu, wall)
    time.sleep(0.2)  # the window closes 1 ms after the last request
    pid = d.proc.pid
    cpu0 = cpu_seconds(pid)
    time.sleep(1.0)
    idle = cpu_seconds(pid) - cpu0
    assert idle < 0.2, "daemon used %.2fs of CPU in 1s without requests" % idle


def test_a_reload_turns_it_off(make_daemon):
    d = busy_daemon(make_daemon, 1000)
    d.write_config(top_extra="loop = { busy_poll_us = 0 },")
    d.signal(signal.SIGHUP)
    d.wait_log("configuration reloaded")
    cpu, wall = spaced_requests(d, 1.5)
    if not UNDER_VALGRIND:
        # The same requests with the loop sleeping between them.
        assert cpu < 0.5 * wall, "daemon CPU %.2fs in %.2fs of requests" % (cpu, wall)
    assert d.proc.poll() is None
