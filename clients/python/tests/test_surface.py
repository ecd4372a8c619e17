"""The one client surface (protos/contract/surface.json), by reflection: every
type, target, client, hold and admin member exists in this client's spelling
(surface.json `naming`, and the exceptions of surface/python.json), on Client
and AsyncClient, Hold and AsyncHold, Admin and AsyncAdmin; and every
deprecated alias of surface/python.json exists, warns and reaches its
replacement. No daemon: a resumed hold needs none."""

import asyncio
import inspect
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple
from unittest import mock

import pytest

import holdfast
from holdfast import _deprecated

CONTRACT = Path(__file__).resolve().parents[3] / "protos" / "contract"
SURFACE = json.loads((CONTRACT / "surface.json").read_text())
PYTHON = json.loads((CONTRACT / "surface" / "python.json").read_text())
NAMING = SURFACE["naming"]["python"]
README = Path(__file__).resolve().parents[1] / "README.md"


def spell(name: str, rule: str) -> str:
    """surface.json `naming_rules`: canonical snake_case in the rule's spelling."""
    if rule == "snake":
        return name
    pascal = "".join(w[:1].upper() + w[1:] for w in name.split("_"))
    return pascal if rule == "Pascal" else pascal[:1].lower() + pascal[1:]


def spellings(section: str, name: str) -> List[str]:
    """How Python spells surface.json's `section`.`name`: python.json's
    `spelling`, else the rule of `naming`."""
    given = PYTHON["spelling"].get(f"{section}.{name}")
    if given:
        return given
    rule = {"types": "type", "targets": "target"}.get(section, "member")
    return [spell(name, NAMING[rule])]


def canonical(section: str) -> List[str]:
    return [n for n in SURFACE[section] if not n.startswith("$")]


def missing(obj: Any, names: List[str]) -> List[str]:
    """The names `obj` lacks (looked up on its type first, so that a property
    is not run)."""
    return [n for n in names if not hasattr(type(obj), n) and not hasattr(obj, n)]


# One instance per spelling: Client -> Hold, Admin; AsyncClient -> AsyncHold, AsyncAdmin.
CLIENT_TYPES = spellings("types", "client")
HOLD_TYPES = spellings("types", "hold")
ADMIN_TYPES = spellings("types", "admin")


def clients() -> List[Any]:
    return [getattr(holdfast, t)("/nonexistent/holdfast.sock") for t in CLIENT_TYPES]


def holds(target: Any = ("E7",)) -> List[Any]:
    return [c.resume("seat", "run-1", target, "17.secret") for c in clients()]


# ---- the surface -----------------------------------------------------------------

def test_the_checker_reports_a_missing_name():
    class Partial:
        hold = None
    assert missing(Partial(), ["hold", "resume"]) == ["resume"]
    assert spell("confirm_result", "Pascal") == "ConfirmResult"
    assert spell("set_capacity", "camel") == "setCapacity"
    assert spellings("types", "client") == ["Client", "AsyncClient"]
    assert spellings("types", "pool_capacity") == ["PoolCapacity"]


def test_every_type_exists_in_its_spelling():
    for name in canonical("types"):
        for spelled in spellings("types", name):
            assert spelled in holdfast.__all__, f"types.{name}: holdfast.{spelled} is not exported"
            assert inspect.isclass(getattr(holdfast, spelled)), f"holdfast.{spelled} is no type"


def test_every_target_constructor_makes_a_target():
    for name in canonical("targets"):
        for spelled in spellings("targets", name):
            cls = getattr(holdfast, spelled, None)
            assert inspect.isclass(cls) and issubclass(cls, holdfast.Target), \
                f"targets.{name}: holdfast.{spelled} is not a Target type"
    assert isinstance(holdfast.Seats(["E7"], segment=(0, 2)), holdfast.Target)
    assert isinstance(holdfast.Units({"adult": 2}), holdfast.Target)
    assert isinstance(holdfast.Units(["adult"]), holdfast.Target)  # names only: Status


@pytest.mark.parametrize("section,instances", [
    ("client", clients), ("hold", holds), ("admin", lambda: [c.admin for c in clients()])],
    ids=["client", "hold", "admin"])
def test_every_member_exists_on_every_spelling(section, instances):
    names = [spellings(section, n)[0] for n in canonical(section)]
    objs = instances()
    assert [type(o).__name__ for o in objs] == spellings("types", section)
    for obj in objs:
        assert missing(obj, names) == [], f"{type(obj).__name__} lacks surface.{section} names"


def test_the_client_hands_out_its_own_hold_and_admin_types():
    for c, hold_type, admin_type in zip(clients(), HOLD_TYPES, ADMIN_TYPES):
        assert type(c.resume("ga", "p", holdfast.Units({"a": 1}), "1.x")).__name__ == hold_type
        assert type(c.admin).__name__ == admin_type and c.admin is c.admin


def test_ops_are_coroutines_on_the_async_spellings_only():
    sync, aio = clients()
    for name in ("cancel", "status", "get_capacity", "health", "metrics"):
        assert not inspect.iscoroutinefunction(getattr(sync, name))
        assert inspect.iscoroutinefunction(getattr(aio, name)), f"AsyncClient.{name}"
    for name in ("extend", "release", "confirm", "status"):
        assert inspect.iscoroutinefunction(getattr(holds()[1], name)), f"AsyncHold.{name}"
    for name in canonical("admin"):
        assert inspect.iscoroutinefunction(getattr(aio.admin, name)), f"AsyncAdmin.{name}"
    assert not inspect.iscoroutinefunction(aio.resume)  # no call to the daemon


def test_a_resumed_hold_reads_its_fence_from_the_token():
    for h in holds():
        assert (h.namespace, h.partition, h.target, h.fence) == \
            ("seat", "run-1", holdfast.Seats(["E7"]), 17)
        assert h.token == "17.secret" and "secret" not in repr(h) and h.lost is None
    assert clients()[0].resume("seat", "p", ["E7"], "not-a-token").fence == 0


# ---- deprecated aliases ---------------------------------------------------------

# A call of each deprecated method (its old signature), to see where it goes.
SAMPLES: Dict[str, Tuple[tuple, dict]] = {
    "extend": (("seat", "p", ["E7"], "1.t"), {"ttl_ms": 1000}),
    "release": (("seat", "p", ["E7"], "1.t"), {}),
    "confirm": (("seat", "p", ["E7"], "1.t"), {"idempotency_key": "k"}),
    "hold_units": (("ga", "p", {"adult": 1}), {"ttl_ms": 1000}),
    "extend_units": (("ga", "p", ["adult"], "1.t"), {}),
    "release_units": (("ga", "p", ["adult"], "1.t"), {}),
    "confirm_units": (("ga", "p", {"adult": 1}, "1.t"), {"idempotency_key": "k"}),
    "cancel_units": (("ga", "p", {"adult": 1}), {"idempotency_key": "k", "reference": "r"}),
    "pool_status": (("ga", "p", ["adult"]), {}),
    "set_capacity": (("ga", "p", "adult", 5), {}),
    "set_default_capacity": (("ga", "p", 1), {}),
}

SECTIONS = {"client": clients, "options": clients,
            "hold": lambda: holds(holdfast.Seats(["E7"], (0, 2))) + holds(holdfast.Units({"adult": 2}))}


def settle(out: Any) -> Any:
    """An AsyncClient's answer awaited (a coroutine, or the awaitable of hold)."""
    async def wait() -> Any:
        return await out
    return asyncio.run(wait()) if inspect.isawaitable(out) else out


def path_of(replacement: str, section: str) -> List[str]:
    assert replacement.startswith(section + "."), f"{replacement} is not a {section} name"
    return replacement[len(section) + 1:].split(".")


def reaches_by_call(obj: Any, name: str, path: List[str], monkeypatch) -> None:
    """Call the alias `name` with a spy in place of the replacement's first
    call, and check that it reached each step of `path`."""
    owner = obj
    while not path[0].endswith("()") and len(path) > 1:
        owner = getattr(owner, path.pop(0))  # a plain member on the way (client.admin)
    first = path.pop(0).rstrip("()")
    real = getattr(owner, first)
    spy = (mock.AsyncMock if inspect.iscoroutinefunction(real) else mock.MagicMock)()
    monkeypatch.setattr(owner, first, spy)
    args, kwargs = SAMPLES[name]
    with pytest.warns(DeprecationWarning, match=re.escape(name)):
        out = getattr(obj, name)(*args, **kwargs)
    settle(out)
    assert spy.called, f"{type(obj).__name__}.{name} did not call {first}"
    step = spy
    for part in path:  # what is called on the answer (resume().extend)
        step = getattr(step.return_value, part.rstrip("()"))
        assert step.called, f"{type(obj).__name__}.{name} did not go on to {part}"


class Sent(Exception):
    """Raised by the stand-in for the transport: the request was built."""


def reaches_a_target(obj: Any, name: str, replacement: str, monkeypatch) -> None:
    """The deprecated keyword `name` of hold, cancel and status builds the
    request its replacement target would (options.segment -> Seats)."""
    assert replacement == "targets.Seats" and name == "segment"
    sent = []

    def capture(call, *args, **kwargs):
        sent.append(call.msg)
        raise Sent

    async def acapture(call, *args, **kwargs):
        capture(call)

    monkeypatch.setattr(obj, "_call_on", acapture if inspect.iscoroutinefunction(obj._call_on)
                        else capture)
    for op, kwargs in (("hold", {}), ("cancel", {"idempotency_key": "k"}), ("status", {})):
        assert name in inspect.signature(getattr(obj, op)).parameters, f"{op}({name}=) is gone"
        with pytest.warns(DeprecationWarning, match=f"{name}="), pytest.raises(Sent):
            out = getattr(obj, op)("train", "p", ["E7"], segment=(0, 2), **kwargs)
            settle(out)
        want = holdfast.Seats(["E7"], (0, 2))
        assert (list(sent[-1].ids), sent[-1].segment.from_stop, sent[-1].segment.to_stop) == \
            (list(want.ids), want.segment.from_stop, want.segment.to_stop)


@pytest.mark.parametrize("alias,replacement", sorted(PYTHON["deprecated"].items()))
def test_every_deprecated_alias_warns_and_reaches_its_replacement(alias, replacement,
                                                                  monkeypatch):
    section, name = alias.split(".", 1)
    if section == "types":  # a type of the package
        assert name not in holdfast.__all__
        with pytest.warns(DeprecationWarning, match=name):
            old = getattr(holdfast, name)
        assert old is getattr(holdfast, path_of(replacement, "types")[0])
        return
    checked = 0
    for obj in SECTIONS[section]():
        if section == "options":
            reaches_a_target(obj, name, replacement, monkeypatch)
            checked += 1
            continue
        assert name in dir(type(obj)), f"{type(obj).__name__}.{name} is gone"
        path = path_of(replacement, section)
        if inspect.isfunction(getattr(type(obj), name)):
            assert name in SAMPLES, f"add a sample call of the deprecated {alias} to SAMPLES"
            reaches_by_call(obj, name, path, monkeypatch)
            checked += 1
            continue
        try:  # a property: the replacement's value (on a hold whose target has it)
            want = obj
            for part in path:
                want = getattr(want, part)
        except AttributeError:
            continue
        with pytest.warns(DeprecationWarning, match=re.escape(alias)):
            assert getattr(obj, name) == want
        checked += 1
    assert checked >= 2, f"{alias} was checked on {checked} of the sync and async types"


def test_python_json_lists_every_alias_the_client_keeps():
    """The names the code keeps, and python.json's list, are the same (a
    deprecated keyword, options.<name>, is checked above)."""
    kept = {f"types.{n}" for n in _deprecated.TYPES}
    kept |= {f"client.{n}" for n, v in vars(_deprecated.ClientAliases).items()
             if inspect.isfunction(v)}
    kept |= {f"hold.{n}" for n, v in vars(_deprecated.HoldAliases).items()
             if isinstance(v, property)}
    listed = {k for k in PYTHON["deprecated"] if not k.startswith("options.")}
    assert kept == listed
    assert {f"types.{k}": f"types.{v}" for k, v in _deprecated.TYPES.items()} == \
        {k: v for k, v in PYTHON["deprecated"].items() if k.startswith("types.")}


def test_the_readme_documents_every_alias():
    text = README.read_text()
    section = text[text.index("## Deprecated names"):]
    section = section[:section.find("\n## ", 1)]
    for alias in PYTHON["deprecated"]:
        # as the README writes them: PoolHold, client.hold_units, hold.ids, segment=
        section_name, name = alias.split(".", 1)
        spelled = {"types": name, "options": f"{name}="}.get(section_name, alias)
        assert re.search(r"`" + re.escape(spelled) + r"(\b|`)", section), \
            f"README, Deprecated names: {alias} is missing"
