"""Every Python snippet of the README runs against the test stack, as
written, with deprecation warnings as errors (the README shows the surface
of surface.json). Each snippet gets a `client` of its own, and fresh
partitions and order ids in place of the README's literal ones, so it runs
again and again on the same stack; `Client()` finds the stack through HOLDFAST_SOCKET, set
here to the test stack's socket."""

import contextlib
import io
import re
import uuid
from pathlib import Path

import pytest

from holdfast import Client

pytestmark = pytest.mark.live

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
PARTITIONS = ("run-2026-12-01-KTX101", "show-2026-12-24", "KTX-101", "product-10001")


def test_the_readme_has_snippets():
    assert len(SNIPPETS) >= 8


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet-{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code, stack, monkeypatch):
    monkeypatch.setenv("HOLDFAST_SOCKET", stack.socket)
    suffix = uuid.uuid4().hex[:8]
    for p in PARTITIONS:
        code = code.replace(f'"{p}"', f'"{p}-{suffix}"')
    # Idempotency keys live per namespace, whatever the partition: fresh orders too.
    code = re.sub(r"\border-(\w+)", rf"order-\1-{suffix}", code)
    client = Client(stack.socket, timeout=5)
    names = {"client": client, "__name__": "readme"}
    with contextlib.redirect_stdout(io.StringIO()):  # what the snippets print
        try:
            exec(compile(code, str(README), "exec"), names)
            if "confirm_with_retry" in names:  # a snippet that only defines the helper
                with client.hold("seat", f"retry-{suffix}", ["E7"]) as hold:
                    assert not names["confirm_with_retry"](hold, f"order-{suffix}").replayed
        finally:
            for c in {id(v): v for v in [client, *names.values()]
                      if isinstance(v, Client)}.values():
                c.close()  # the snippet's own clients too (and their session holds)
