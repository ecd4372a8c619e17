"""The blocking client's read and write paths. Reading (leader/followers): a
caller reads its own answer when nobody else reads, dispatches the answers of
the others, and hands reading over; a watcher reads only while the connection
has session holds. Writing: frames queued while a caller writes go out with
its own. Against the scripted peer of fakedaemon.py."""

import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from holdfast import Client, DeadlineExceeded, HeldByAnother, Unavailable
from holdfast import client as client_mod
from holdfast._gen import holdfast_pb2 as pb

from fakedaemon import FakeDaemon, ok_for


@pytest.fixture
def sock_path():
    d = tempfile.mkdtemp(prefix="hf-r-")
    yield str(Path(d) / "hf.sock")
    shutil.rmtree(d, ignore_errors=True)


class Scripted:
    """A handler that keeps every request; the test answers them when it likes."""

    def __init__(self, daemon: FakeDaemon) -> None:
        self.daemon = daemon
        self.reqs = {}           # first status id -> request
        self.cond = threading.Condition()
        self._send = threading.Lock()
        daemon.handler = self

    def __call__(self, req):
        with self.cond:
            self.reqs[req.status.ids[0] if req.WhichOneof("method") == "status" else
                      req.WhichOneof("method")] = req
            self.cond.notify_all()
        return None

    def wait_for(self, *keys, timeout=5.0):
        with self.cond:
            assert self.cond.wait_for(lambda: all(k in self.reqs for k in keys), timeout), \
                f"requests {keys} did not arrive"

    def answer(self, *keys):
        data = b""
        for k in keys:
            req = self.reqs[k]
            resp = ok_for(req)
            if req.WhichOneof("method") == "status":
                for i in req.status.ids:
                    resp.status.resources.add(id=i, state=pb.RESOURCE_STATE_FREE)
            data += frame(resp)
        with self._send:
            self.daemon.send_raw(data)


def frame(resp):
    body = resp.SerializeToString()
    return len(body).to_bytes(4, "big") + body


@pytest.fixture
def daemon(sock_path):
    d = FakeDaemon(sock_path).start()
    yield d
    d.stop()


def call_in_thread(c, rid, results, timeout=5.0):
    def run():
        t0 = time.monotonic()
        try:
            results[rid] = ([s.id for s in c.status("seat", "p", [rid], timeout=timeout).resources],
                            time.monotonic() - t0)
        except Exception as exc:  # collected: asserting in threads is lost otherwise
            results[rid] = (exc, time.monotonic() - t0)
    t = threading.Thread(target=run)
    t.start()
    return t


def reader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("holdfast-")]


def test_one_call_reads_its_own_answer_without_a_reader_thread(daemon, sock_path):
    with Client(sock_path) as c:
        for _ in range(20):
            assert c.health().ready
        assert reader_threads() == []  # no thread of the client's own
        h = c.hold("seat", "p", ["E7"])
        h.release()
        assert reader_threads() == []


def test_answers_out_of_order_across_threads(daemon, sock_path):
    s = Scripted(daemon)
    keys = [f"R{n}" for n in range(8)]
    results = {}
    with Client(sock_path) as c:
        threads = [call_in_thread(c, k, results) for k in keys]
        s.wait_for(*keys)
        time.sleep(0.05)  # let every caller lead or park
        s.answer(*reversed(keys[4:]))
        s.answer(keys[1], keys[3], keys[0], keys[2])
        for t in threads:
            t.join(10)
    assert {k: r[0] for k, r in results.items()} == {k: [k] for k in keys}
    assert daemon.connections == 1


def test_follower_takes_over_reading_when_the_leaders_answer_came(daemon, sock_path):
    s = Scripted(daemon)
    results = {}
    with Client(sock_path) as c:
        a = call_in_thread(c, "A", results)  # alone: it leads
        s.wait_for("A")
        b = call_in_thread(c, "B", results)  # the role is taken: it parks
        s.wait_for("B")
        time.sleep(0.05)
        s.answer("A")
        a.join(5)
        assert results["A"][0] == ["A"]
        assert b.is_alive()
        # Nobody but B is left to read B's answer.
        time.sleep(0.1)
        s.answer("B")
        b.join(5)
        assert results["B"][0] == ["B"] and results["B"][1] < 2
        assert reader_threads() == []


def test_leader_dispatches_a_followers_answer_and_keeps_reading(daemon, sock_path):
    s = Scripted(daemon)
    results = {}
    with Client(sock_path) as c:
        a = call_in_thread(c, "A", results)
        s.wait_for("A")
        b = call_in_thread(c, "B", results)
        s.wait_for("B")
        time.sleep(0.05)
        s.answer("B")  # the follower's answer first: read by the leader
        b.join(5)
        assert results["B"][0] == ["B"] and a.is_alive()
        s.answer("A")
        a.join(5)
        assert results["A"][0] == ["A"]


def test_leader_times_out_and_a_follower_takes_over(daemon, sock_path):
    s = Scripted(daemon)
    results = {}
    with Client(sock_path) as c:
        a = call_in_thread(c, "A", results, timeout=0.3)  # the leader, short deadline
        s.wait_for("A")
        b = call_in_thread(c, "B", results, timeout=5)
        s.wait_for("B")
        a.join(5)
        assert isinstance(results["A"][0], DeadlineExceeded)
        assert results["A"][1] < 2
        s.answer("A", "B")  # A's late answer is dropped; B (now reading) gets its own
        b.join(5)
        assert results["B"][0] == ["B"] and results["B"][1] < 3


def test_follower_times_out_while_the_leader_reads(daemon, sock_path):
    s = Scripted(daemon)
    results = {}
    with Client(sock_path) as c:
        a = call_in_thread(c, "A", results, timeout=5)
        s.wait_for("A")
        b = call_in_thread(c, "B", results, timeout=0.3)
        s.wait_for("B")
        b.join(5)
        assert isinstance(results["B"][0], DeadlineExceeded) and results["B"][1] < 2
        assert a.is_alive()
        s.answer("B", "A")
        a.join(5)
        assert results["A"][0] == ["A"]


def test_connection_broken_while_several_callers_wait(daemon, sock_path):
    s = Scripted(daemon)
    keys = [f"R{n}" for n in range(6)]
    results = {}
    with Client(sock_path) as c:
        threads = [call_in_thread(c, k, results, timeout=10) for k in keys]
        s.wait_for(*keys)
        time.sleep(0.05)
        daemon.stop()
        for t in threads:
            t.join(5)
        for k in keys:
            err, took = results[k]
            assert isinstance(err, Unavailable) and "unknown" in str(err), (k, err)
            assert took < 3
        daemon.handler = ok_for
        daemon.start()
        assert c.health().ready  # the next call reconnects


def test_close_fails_every_waiting_caller(daemon, sock_path):
    s = Scripted(daemon)
    keys = ["A", "B", "C"]
    results = {}
    c = Client(sock_path)
    threads = [call_in_thread(c, k, results, timeout=10) for k in keys]
    s.wait_for(*keys)
    time.sleep(0.05)
    c.close()
    for t in threads:
        t.join(5)
    assert all(type(results[k][0]).__name__ == "ClientClosed" for k in keys)


def test_session_event_with_no_call_in_flight_is_delivered(daemon, sock_path, monkeypatch):
    monkeypatch.setattr(client_mod._Connection, "WATCH_RECHECK", 0.1)
    seen = []
    with Client(sock_path) as c:
        assert reader_threads() == []
        h = c.hold("seat", "p", ["E7"], session=True, on_lost=seen.append)
        assert [t.name for t in reader_threads()] == ["holdfast-watcher"]
        time.sleep(0.2)  # nothing in flight for a while
        ev = pb.Response(id=0, code=pb.CODE_OK)
        ev.session_event.lost.add(namespace="seat", partition="p", ids=["E7"], fence=1,
                                  reason=pb.CODE_HELD_BY_ANOTHER, resource_id="E7",
                                  message="taken over")
        daemon.send_raw(frame(ev))
        deadline = time.monotonic() + 5
        while h.lost is None:
            assert time.monotonic() < deadline, "the lost event did not reach the hold"
            time.sleep(0.005)
        assert isinstance(h.lost, HeldByAnother) and seen == [h]
        # Calls still read their own answers while the watcher is there.
        for _ in range(20):
            assert c.health().ready
        h.release()
        # No session hold left: the watcher ends.
        deadline = time.monotonic() + 5
        while reader_threads():
            assert time.monotonic() < deadline, "the watcher outlived the session holds"
            time.sleep(0.01)
        assert c.health().ready


def test_watcher_hands_reading_to_callers_and_back(daemon, sock_path, monkeypatch):
    """Calls in flight while the watcher reads: every answer arrives, and a
    lost event afterwards still does."""
    monkeypatch.setattr(client_mod._Connection, "WATCH_RECHECK", 0.05)
    s = Scripted(daemon)
    results = {}
    seen = []
    with Client(sock_path) as c:
        daemon.handler = ok_for
        h = c.hold("seat", "p", ["E7"], session=True, on_lost=seen.append)
        s = Scripted(daemon)
        keys = [f"R{n}" for n in range(5)]
        threads = [call_in_thread(c, k, results) for k in keys]
        s.wait_for(*keys)
        for k in keys:
            time.sleep(0.03)
            s.answer(k)
        for t in threads:
            t.join(5)
        assert {k: r[0] for k, r in results.items()} == {k: [k] for k in keys}
        ev = pb.Response(id=0, code=pb.CODE_OK)
        ev.session_event.lost.add(namespace="seat", partition="p", ids=["E7"], fence=1,
                                  reason=pb.CODE_NOT_HELD, resource_id="E7", message="expired")
        daemon.send_raw(frame(ev))
        deadline = time.monotonic() + 5
        while h.lost is None:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert seen == [h]


def test_many_threads_random_answer_delays_and_deadlines(daemon, sock_path):
    """Stress: answers in random order and at random times; some calls time
    out. Every call gets its own answer or DeadlineExceeded, none hangs."""
    rng = random.Random(7)
    send_lock = threading.Lock()

    def later(req):
        resp = ok_for(req)
        for i in req.status.ids:
            resp.status.resources.add(id=i, state=pb.RESOURCE_STATE_FREE)
        delay = rng.choice([0, 0, 0.001, 0.005, 0.02, 0.3])

        def send():
            with send_lock:
                try:
                    daemon.send_raw(frame(resp))
                except OSError:
                    pass
        threading.Timer(delay, send).start()
        return None

    daemon.handler = later
    errors = []
    got = [0, 0]
    with Client(sock_path) as c:
        def worker(n):
            for k in range(40):
                rid = f"W{n}-{k}"
                t0 = time.monotonic()
                try:
                    r = c.status("seat", "p", [rid], timeout=0.15)
                    if [s.id for s in r.resources] != [rid]:
                        errors.append(("wrong answer", rid, r))
                    got[0] += 1
                except DeadlineExceeded:
                    got[1] += 1
                    if time.monotonic() - t0 > 1.0:
                        errors.append(("late deadline", rid))
                except Exception as exc:
                    errors.append((rid, exc))
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert got[0] > 0 and got[1] > 0 and sum(got) == 320


def test_a_close_seen_while_idle_sends_the_next_call_on_a_new_connection(daemon, sock_path):
    """Nobody reads an idle connection; the daemon's close must still not cost
    the next call an unknown outcome: it goes out on a new connection."""
    with Client(sock_path) as c:
        assert c.health().ready
        daemon.half_close()
        time.sleep(0.05)
        assert c.health().ready
    assert daemon.connections == 2


# ---- the write path --------------------------------------------------------

BIG = ["x" * 1000] * 4000  # a 4 MB request: more than the socket buffers hold


def test_daemon_not_reading_cuts_a_request_off_at_its_deadline(daemon, sock_path):
    with Client(sock_path) as c:
        assert c.health().ready
        daemon.reading.clear()
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded) as ei:
            c.status("seat", "p", BIG, timeout=0.3)
        assert time.monotonic() - t0 < 2
        assert "not reading" in str(ei.value)
        daemon.reading.set()
        assert c.health().ready  # half a frame went out: a new connection
    assert daemon.connections == 2


def test_a_frame_queued_behind_a_cut_off_one_is_resent(daemon, sock_path):
    """B's frame waits in the queue while A's cannot be written; A's deadline
    cuts the connection: B's never left, so it goes out on a new connection."""
    daemon.handler = lambda req: ok_for(req) if req.WhichOneof("method") != "status" or \
        len(req.status.ids) < 10 else None
    results = {}
    with Client(sock_path) as c:
        assert c.health().ready
        daemon.reading.clear()
        a = threading.Thread(target=lambda: results.setdefault(
            "A", _outcome(lambda: c.status("seat", "p", BIG, timeout=0.4))))
        a.start()
        time.sleep(0.1)  # A is writing (stalled)
        b = threading.Thread(target=lambda: results.setdefault(
            "B", _outcome(lambda: c.health(timeout=5))))
        b.start()
        a.join(5)
        assert isinstance(results["A"], DeadlineExceeded)
        daemon.reading.set()
        b.join(5)
        assert not isinstance(results["B"], Exception) and results["B"].ready
    assert daemon.connections == 2


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:
        return exc


def test_a_frame_refused_by_a_closed_socket_is_resent(daemon, sock_path, monkeypatch):
    """The daemon went away while the connection was idle and the idle check
    did not see it: the write fails (EPIPE), nothing reached the daemon, so the
    call goes out again on a new connection."""
    monkeypatch.setattr(client_mod._Connection, "_settle", lambda self: None)
    with Client(sock_path) as c:
        assert c.health().ready
        daemon.stop()
        daemon.start()
        assert c.health().ready
    assert daemon.connections == 2


def test_many_threads_writing_at_once_all_get_through(daemon, sock_path):
    results = {}
    keys = [f"K{n}" for n in range(32)]
    daemon.handler = lambda req: [_status_answer(req)]
    with Client(sock_path) as c:
        threads = [call_in_thread(c, k, results) for k in keys]
        for t in threads:
            t.join(10)
    assert {k: r[0] for k, r in results.items()} == {k: [k] for k in keys}
    ids = [r.id for r in daemon.requests]
    assert len(ids) == 32 and len(set(ids)) == 32


def _status_answer(req):
    resp = ok_for(req)
    for i in req.status.ids:
        resp.status.resources.add(id=i, state=pb.RESOURCE_STATE_FREE)
    return resp
