"""Trace context (the client contract's "Trace context", contract.json
"trace_context"): every request carries the call's own traceparent, else the
current OpenTelemetry span's, else none; checked on the wire with the fake
daemon, with the OpenTelemetry API (a test dependency) and, in a subprocess,
without it."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from holdfast import AsyncClient, Client

from fakedaemon import FakeDaemon

try:
    from opentelemetry import trace
except ImportError:  # the test extra installs it; the last test runs without it anyway
    trace = None

needs_otel = pytest.mark.skipif(trace is None, reason="opentelemetry-api is not installed")

CONTRACT = json.loads((Path(__file__).resolve().parents[3] / "protos" / "contract" /
                       "contract.json").read_text())["trace_context"]
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def sock_path():
    d = tempfile.mkdtemp(prefix="hf-tr-")
    yield str(Path(d) / "hf.sock")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemon(sock_path):
    d = FakeDaemon(sock_path).start()
    yield d
    d.stop()


def span(trace_id: str, span_id: str, sampled: bool = True):
    """A span for the current context, as an instrumented caller has one
    (the API alone: no SDK needed)."""
    return trace.NonRecordingSpan(trace.SpanContext(
        trace_id=int(trace_id, 16), span_id=int(span_id, 16), is_remote=False,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED if sampled else 0)))


def in_span(otel):
    if otel is None:
        return trace.use_span(trace.INVALID_SPAN)
    return trace.use_span(span(otel["trace_id"], otel["span_id"], otel["sampled"]))


def test_contract_fields():
    assert CONTRACT["field"] == "traceparent"
    assert CONTRACT["explicit_empty_means_none"] and CONTRACT["explicit_sent_as_given"]
    assert CONTRACT["opentelemetry_required"] is False


@needs_otel
@pytest.mark.parametrize("case", CONTRACT["cases"], ids=range(len(CONTRACT["cases"])))
def test_contract_cases_sync(daemon, sock_path, case):
    with Client(sock_path, timeout=5) as c, in_span(case["otel"]):
        c.health(traceparent=case["explicit"])
    assert daemon.requests[-1].traceparent == case["traceparent"]


@needs_otel
@pytest.mark.parametrize("case", CONTRACT["cases"], ids=range(len(CONTRACT["cases"])))
def test_contract_cases_async(daemon, sock_path, case):
    async def main():
        async with AsyncClient(sock_path, timeout=5) as c:
            with in_span(case["otel"]):
                await c.health(traceparent=case["explicit"])

    asyncio.run(main())
    assert daemon.requests[-1].traceparent == case["traceparent"]


@needs_otel
def test_every_call_through_a_hold_takes_the_context_of_that_call(daemon, sock_path):
    a = span("0af7651916cd43dd8448eb211c80319c", "00000000000000a1")
    b = span("0af7651916cd43dd8448eb211c80319c", "00000000000000b2")
    c_ = span("0af7651916cd43dd8448eb211c80319c", "00000000000000c3", sampled=False)
    with Client(sock_path, timeout=5) as client:
        with trace.use_span(a):
            h = client.hold("seat", "p", ["E7"])
        with trace.use_span(b):
            h.extend(1000)
            h.status(traceparent=TP)  # its own wins
        with trace.use_span(c_):
            with h:
                pass  # the scope's release
    assert [(r.WhichOneof("method"), r.traceparent) for r in daemon.requests] == [
        ("hold", "00-0af7651916cd43dd8448eb211c80319c-00000000000000a1-01"),
        ("extend", "00-0af7651916cd43dd8448eb211c80319c-00000000000000b2-01"),
        ("status", TP),
        ("release", "00-0af7651916cd43dd8448eb211c80319c-00000000000000c3-00"),
    ]


@needs_otel
def test_async_hold_calls_take_the_context_of_the_awaiting_task(daemon, sock_path):
    a = span("4bf92f3577b34da6a3ce929d0e0e4736", "00000000000000a1")
    b = span("4bf92f3577b34da6a3ce929d0e0e4736", "00000000000000b2")

    async def main():
        async with AsyncClient(sock_path, timeout=5) as client:
            with trace.use_span(a):
                h = await client.hold("seat", "p", ["E7"])
            with trace.use_span(b):
                await h.confirm("k", traceparent="")  # none for this call
                await h.status()

    asyncio.run(main())
    assert [r.traceparent for r in daemon.requests] == [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000a1-01", "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000b2-01"]


@needs_otel
def test_outside_any_span_nothing_is_sent(daemon, sock_path):
    with Client(sock_path, timeout=5) as c:
        c.health()
        c.resume("seat", "p", ["E7"], "1.x").release(traceparent=TP)
    assert [r.traceparent for r in daemon.requests] == ["", TP]


def test_a_wrong_type_is_refused_before_sending(daemon, sock_path):
    with Client(sock_path, timeout=5) as c, pytest.raises(TypeError):
        c.health(traceparent=b"00-...")  # type: ignore[arg-type]
    assert daemon.requests == []


WITHOUT_OTEL = textwrap.dedent("""
    import sys
    class NoOpenTelemetry:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError("opentelemetry is not installed (test)")
    sys.meta_path.insert(0, NoOpenTelemetry())

    import asyncio
    from holdfast import AsyncClient, Client
    from fakedaemon import FakeDaemon

    d = FakeDaemon(sys.argv[1]).start()
    with Client(sys.argv[1], timeout=5) as c:
        with c.hold("seat", "p", ["E7"]) as h:
            h.confirm("k")
        c.health(traceparent=sys.argv[2])

    async def main():
        async with AsyncClient(sys.argv[1], timeout=5) as c:
            await c.health()
    asyncio.run(main())
    d.stop()
    assert not [m for m in sys.modules if m.startswith("opentelemetry")]
    print([(r.WhichOneof("method"), r.traceparent) for r in d.requests])
""")


def test_without_the_opentelemetry_api_the_client_works_unchanged(sock_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([sys.executable, "-c", WITHOUT_OTEL, sock_path, TP], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == repr([("hold", ""), ("confirm", ""), ("health", TP),
                                       ("health", "")])


@needs_otel
@pytest.mark.live
def test_the_daemon_logs_the_trace_id_of_the_current_span(stack, client, partition):
    import secrets
    import time
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    cid = "py-trace-" + secrets.token_hex(6)
    with trace.use_span(span(trace_id, span_id)):
        with client.hold("seat", partition, ["E1"], correlation_id=cid):
            pass
    want = f"req cid={cid} trace={trace_id} op=release"
    log = stack.dir / "holdfastd.log"
    deadline = time.monotonic() + 5
    while want not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{want!r} not in {log}"
        time.sleep(0.02)
    assert f"req cid={cid} trace={trace_id} op=hold" in log.read_text(errors="replace")
