"""The names of the Python client before the one client surface
(protos/contract/surface.json), kept for one release. Each warns with a
DeprecationWarning and forwards to its replacement;
protos/contract/surface/python.json lists them (alias -> replacement) and the
README ("Deprecated names") says what to write instead. The next release
deletes this module and its three uses."""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Dict, Iterable, Optional

from ._targets import Seats, SegmentLike, Units, UnitsLike

# holdfast.<alias> -> holdfast.<replacement> (served by holdfast.__getattr__).
TYPES: Dict[str, str] = {
    "PoolHold": "Hold",
    "AsyncPoolHold": "AsyncHold",
    "PoolConfirmResult": "ConfirmResult",
    "PoolCancelResult": "CancelResult",
}


def _warn(old: str, new: str) -> None:
    # stacklevel 3: the line that used the old name, not this module.
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)


def type_alias(name: str, names: Dict[str, Any]) -> Any:
    """The replacement of the deprecated type `name`, from the package's `names`."""
    new = TYPES.get(name)
    if new is None:
        raise AttributeError(f"module 'holdfast' has no attribute {name!r}")
    _warn(f"holdfast.{name}", f"holdfast.{new}")
    return names[new]


def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
    """fn(value); for an AsyncClient's awaitable, an awaitable of it."""
    if inspect.isawaitable(value):
        async def later() -> Any:
            return fn(await value)
        return later()
    return fn(value)


def _seats(ids: Any, segment: Optional[SegmentLike]) -> Any:
    return ids if segment is None else Seats(ids, segment)


class ClientAliases:
    """Mixed into Client and AsyncClient. Each alias only calls the client's
    own methods, so on an AsyncClient it returns what they return: something
    to await."""

    hold: Any
    resume: Any
    cancel: Any
    status: Any
    admin: Any

    def extend(self, namespace: str, partition: str, ids: Iterable[str], token: str, *,
               ttl_ms: int = 0, segment: Optional[SegmentLike] = None,
               timeout: Optional[float] = None, correlation_id: Optional[str] = None,
               traceparent: Optional[str] = None) -> Any:
        _warn("client.extend(ns, partition, ids, token)",
              "client.resume(ns, partition, target, token).extend(ttl_ms)")
        return self.resume(namespace, partition, _seats(ids, segment), token,
                           correlation_id=correlation_id).extend(
            ttl_ms, timeout=timeout, traceparent=traceparent)

    def release(self, namespace: str, partition: str, ids: Iterable[str], token: str, *,
                segment: Optional[SegmentLike] = None, timeout: Optional[float] = None,
                correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> Any:
        _warn("client.release(ns, partition, ids, token)",
              "client.resume(ns, partition, target, token).release()")
        return self.resume(namespace, partition, _seats(ids, segment), token,
                           correlation_id=correlation_id).release(
            timeout=timeout, traceparent=traceparent)

    def confirm(self, namespace: str, partition: str, ids: Iterable[str], token: str, *,
                idempotency_key: str, reference: str = "", payload: bytes = b"",
                segment: Optional[SegmentLike] = None, timeout: Optional[float] = None,
                correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> Any:
        _warn("client.confirm(ns, partition, ids, token, ...)",
              "client.resume(ns, partition, target, token).confirm(key, ...)")
        return self.resume(namespace, partition, _seats(ids, segment), token,
                           correlation_id=correlation_id).confirm(
            idempotency_key, reference=reference, payload=payload, timeout=timeout,
            traceparent=traceparent)

    def hold_units(self, namespace: str, partition: str, units: UnitsLike, **kw: Any) -> Any:
        _warn("client.hold_units(ns, partition, units)",
              "client.hold(ns, partition, Units(units))")
        return self.hold(namespace, partition, Units(units), **kw)

    def extend_units(self, namespace: str, partition: str, pools: Iterable[str], token: str, *,
                     ttl_ms: int = 0, timeout: Optional[float] = None,
                     correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> Any:
        _warn("client.extend_units(ns, partition, pools, token)",
              "client.resume(ns, partition, Units(pools), token).extend(ttl_ms)")
        return self.resume(namespace, partition, Units(pools), token,
                           correlation_id=correlation_id).extend(
            ttl_ms, timeout=timeout, traceparent=traceparent)

    def release_units(self, namespace: str, partition: str, pools: Iterable[str], token: str, *,
                      timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                      traceparent: Optional[str] = None) -> Any:
        _warn("client.release_units(ns, partition, pools, token)",
              "client.resume(ns, partition, Units(pools), token).release()")
        return self.resume(namespace, partition, Units(pools), token,
                           correlation_id=correlation_id).release(
            timeout=timeout, traceparent=traceparent)

    def confirm_units(self, namespace: str, partition: str, units: UnitsLike, token: str, *,
                      idempotency_key: str, reference: str = "", payload: bytes = b"",
                      timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                      traceparent: Optional[str] = None) -> Any:
        _warn("client.confirm_units(ns, partition, units, token, ...)",
              "client.resume(ns, partition, Units(units), token).confirm(key, ...)")
        return self.resume(namespace, partition, Units(units), token,
                           correlation_id=correlation_id).confirm(
            idempotency_key, reference=reference, payload=payload, timeout=timeout,
            traceparent=traceparent)

    def cancel_units(self, namespace: str, partition: str, units: UnitsLike, **kw: Any) -> Any:
        _warn("client.cancel_units(ns, partition, units, ...)",
              "client.cancel(ns, partition, Units(units), ...)")
        return self.cancel(namespace, partition, Units(units), **kw)

    def pool_status(self, namespace: str, partition: str, pools: Iterable[str],
                    **kw: Any) -> Any:
        _warn("client.pool_status(ns, partition, pools)",
              "client.status(ns, partition, Units(pools)).pools")
        # The old answer: a list of PoolStatus.
        return _then(self.status(namespace, partition, Units(pools), **kw),
                     lambda r: list(r.pools))

    def set_capacity(self, namespace: str, partition: str, pool: str, capacity: int,
                     **kw: Any) -> Any:
        _warn("client.set_capacity(...)", "client.admin.set_capacity(...)")
        return self.admin.set_capacity(namespace, partition, pool, capacity, **kw)

    def set_default_capacity(self, namespace: str, partition: str, capacity: int,
                             **kw: Any) -> Any:
        _warn("client.set_default_capacity(...)", "client.admin.set_default_capacity(...)")
        return self.admin.set_default_capacity(namespace, partition, capacity, **kw)


class HoldAliases:
    """Mixed into every hold handle: the members of the seat and pool handles
    that are now the target's."""

    target: Any

    @property
    def ids(self) -> Any:
        _warn("hold.ids", "hold.target.ids")
        return self.target.ids

    @property
    def segment(self) -> Any:
        _warn("hold.segment", "hold.target.segment")
        return self.target.segment

    @property
    def units(self) -> Any:
        _warn("hold.units", "hold.target.counts")
        return self.target.counts

    @property
    def pools(self) -> Any:
        _warn("hold.pools", "hold.target.pools")
        return self.target.pools
