"""The client contract (protos/contract/contract.json): this client's constants
and behaviour, checked against the file every client reads."""

import asyncio
import json
import logging
import shutil
import tempfile
from pathlib import Path

import pytest

import holdfast
from holdfast import _model as m
from holdfast import (AsyncClient, Client, Code, HoldfastError, RETRYABLE_CODES, Unavailable,
                      code_name)
from holdfast._gen import holdfast_pb2 as pb
from holdfast.errors import error_for

import conftest
from fakedaemon import FakeDaemon, ok_for

CONTRACT = json.loads((Path(__file__).resolve().parents[3] / "protos" / "contract" /
                       "contract.json").read_text())
SCOPE = CONTRACT["scope_exit"]


@pytest.fixture
def sock_path():
    d = tempfile.mkdtemp(prefix="hf-c-")
    yield str(Path(d) / "hf.sock")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemon(sock_path):
    d = FakeDaemon(sock_path).start()
    yield d
    d.stop()


# ---- socket -----------------------------------------------------------------

def test_default_socket_and_env(monkeypatch):
    sock = CONTRACT["socket"]
    assert holdfast.DEFAULT_SOCKET == sock["default_path"]
    assert holdfast.SOCKET_ENV == sock["env"]
    monkeypatch.delenv(sock["env"], raising=False)
    assert Client().socket_path == sock["default_path"]
    assert AsyncClient().socket_path == sock["default_path"]
    monkeypatch.setenv(sock["env"], "/tmp/from-env.sock")
    assert Client().socket_path == "/tmp/from-env.sock"
    assert AsyncClient().socket_path == "/tmp/from-env.sock"
    assert Client("/tmp/explicit.sock").socket_path == "/tmp/explicit.sock"
    assert Client("").socket_path == "/tmp/from-env.sock"  # empty means not given
    monkeypatch.setenv(sock["env"], "")
    assert Client().socket_path == sock["default_path"]


# ---- deadlines ----------------------------------------------------------------

def test_default_timeout():
    seconds = CONTRACT["timeout"]["default_ms"] / 1000
    assert holdfast.DEFAULT_TIMEOUT == seconds
    assert Client("/nonexistent").timeout == seconds
    assert AsyncClient("/nonexistent").timeout == seconds


def test_call_without_timeout_sends_the_default(daemon, sock_path):
    with Client(sock_path) as c:
        c.health()
    sent = daemon.requests[0].timeout_ms
    assert CONTRACT["timeout"]["default_ms"] - 500 < sent <= CONTRACT["timeout"]["default_ms"]


@pytest.mark.parametrize("case", CONTRACT["timeout"]["timeout_ms_examples"],
                         ids=lambda c: str(c["left_us"]))
def test_timeout_ms_rule(case):
    assert m.timeout_ms(case["left_us"] / 1e6) == case["timeout_ms"]


# ---- reconnect backoff --------------------------------------------------------

def test_reconnect_backoff():
    b = CONTRACT["reconnect_backoff"]
    assert (m.RECONNECT_INITIAL, m.RECONNECT_MULTIPLIER, m.RECONNECT_MAX, m.RECONNECT_JITTER) == \
        (b["initial_ms"] / 1000, b["multiplier"], b["max_ms"] / 1000, b["jitter"])
    for ex in b["nominal_examples"]:
        nominal = ex["ms"] / 1000
        assert m.reconnect_delay(ex["attempt"], 0.0) == pytest.approx(nominal)
        low = m.reconnect_delay(ex["attempt"], 0.999999)
        assert nominal * (1 - b["jitter"]) - 1e-9 <= low < nominal


# ---- codes --------------------------------------------------------------------

@pytest.mark.parametrize("case", CONTRACT["codes"], ids=lambda c: c["name"])
def test_code_names_and_retryable(case):
    code = Code(case["value"])
    assert code.name == case["name"]
    assert str(code) == case["name"] and f"{code}" == case["name"]
    assert code_name(case["value"]) == case["name"]
    err = error_for(case["value"], "message")
    assert err.code_name == case["name"]
    assert str(err).startswith(case["name"])
    assert err.retryable is case["retryable"]
    assert (code in RETRYABLE_CODES) is case["retryable"]


def test_retryable_set_and_unknown_codes():
    assert {c.name for c in RETRYABLE_CODES} == set(CONTRACT["retryable_codes"])
    assert len(Code) == len(CONTRACT["codes"])
    for ex in CONTRACT["code_name"]["unknown_examples"]:
        assert code_name(ex["value"]) == ex["name"]
        err = error_for(ex["value"], "from a newer daemon")
        assert err.code_name == ex["name"] and str(err).startswith(ex["name"])
        assert not err.retryable
    assert not holdfast.ClientClosed("closed").retryable
    assert holdfast.ProtocolError("garbage").retryable  # an Unavailable: the connection dropped


# ---- leaving a hold's scope ---------------------------------------------------

def release_answers(code_value):
    def handler(req):
        if req.WhichOneof("method") == "release":
            return pb.Response(id=req.id, code=code_value, message="scripted")
        return ok_for(req)
    return handler


def methods(daemon):
    return [r.WhichOneof("method") for r in daemon.requests]


@pytest.mark.parametrize("name", SCOPE["quiet_release_codes"])
def test_scope_exit_quiet_codes(daemon, sock_path, name):
    daemon.handler = release_answers(Code[name])
    with Client(sock_path) as c:
        with c.hold("seat", "p", ["E7"]) as h:
            pass
        assert not h.active
    assert methods(daemon) == ["hold", "release"]


@pytest.mark.parametrize("name", SCOPE["quiet_release_codes"])
def test_async_scope_exit_quiet_codes(daemon, sock_path, name):
    daemon.handler = release_answers(Code[name])

    async def main():
        async with AsyncClient(sock_path) as c:
            async with c.hold("seat", "p", ["E7"]) as h:
                pass
            assert not h.active

    asyncio.run(main())
    assert methods(daemon) == ["hold", "release"]


def test_scope_exit_other_failure_raises_unless_the_body_raised(daemon, sock_path, caplog):
    daemon.handler = release_answers(Code.UNAVAILABLE)
    with Client(sock_path) as c:
        with pytest.raises(Unavailable):
            with c.hold("seat", "p", ["E7"]):
                pass
        with caplog.at_level(logging.WARNING, logger="holdfast"):
            with pytest.raises(KeyError):  # the body's exception goes on
                with c.hold("seat", "p", ["E8"]):
                    raise KeyError("body")
        assert "UNAVAILABLE" in caplog.text


def test_async_scope_exit_other_failure(daemon, sock_path):
    daemon.handler = release_answers(Code.UNAVAILABLE)

    async def main():
        async with AsyncClient(sock_path) as c:
            with pytest.raises(Unavailable):
                async with c.hold("seat", "p", ["E7"]):
                    pass
            with pytest.raises(KeyError):
                async with c.hold("seat", "p", ["E8"]):
                    raise KeyError("body")

    asyncio.run(main())


def test_scope_exit_after_confirm_or_release_sends_nothing(daemon, sock_path):
    assert SCOPE["sends_release_unless"] == ["released through the hold",
                                             "confirmed through the hold"]
    with Client(sock_path) as c:
        with c.hold("seat", "p", ["E7"]) as h:
            h.confirm("order-1:confirm")
        with c.hold("seat", "p", ["E8"]) as h:
            h.release()
    assert methods(daemon) == ["hold", "confirm", "hold", "release"]


def test_scope_exit_after_failed_confirm_releases(daemon, sock_path):
    assert SCOPE["failed_confirm_still_releases"]

    def conflict(req):
        if req.WhichOneof("method") == "confirm":
            return pb.Response(id=req.id, code=pb.CODE_CONFLICT, message="sold elsewhere")
        return ok_for(req)

    daemon.handler = conflict
    with Client(sock_path) as c:
        with pytest.raises(holdfast.Conflict):
            with c.hold("seat", "p", ["E7"]) as h:
                h.confirm("order-2:confirm")
    assert methods(daemon) == ["hold", "confirm", "release"]


def test_scope_exit_with_a_closed_client_is_quiet(daemon, sock_path):
    assert SCOPE["quiet_when_client_closed"]
    c = Client(sock_path)
    with c.hold("seat", "p", ["E7"]) as h:
        c.close()
    assert not h.active


# ---- tests never use HOLDFAST_SOCKET ------------------------------------------

def test_live_tests_ignore_holdfast_socket():
    t = CONTRACT["tests"]
    assert conftest.TEST_STACK_ENV == t["stack_env"]
    kind, _ = conftest.stack_choice({"HOLDFAST_SOCKET": "/run/holdfast/holdfast.sock"})
    assert kind in ("own", "skip")
    assert conftest.stack_choice({t["stack_env"]: "/tmp/stack",
                                  "HOLDFAST_SOCKET": "/run/holdfast/holdfast.sock"}) == \
        ("given", "/tmp/stack")


def test_error_for_unknown_code_is_plain_holdfast_error():
    err = error_for(99, "x")
    assert type(err) is HoldfastError and err.code == 99
