"""The operator's calls (surface.json `admin`), reached as `client.admin`:
capacity now, force-release later. A surface of its own because the daemon
will refuse these to application clients; reads (`client.get_capacity`) stay
on the client."""

from __future__ import annotations

from typing import Any, Awaitable, Optional, Protocol

from . import _model as m

class _Runs(Protocol):
    """What an Admin needs of its client: run one call (Client._run)."""

    def _run(self, call: "m.Call[Any]", timeout: Optional[float],
             correlation_id: Optional[str], traceparent: Optional[str]) -> Any: ...


class _RunsAsync(Protocol):
    """AsyncClient._run."""

    def _run(self, call: "m.Call[Any]", timeout: Optional[float],
             correlation_id: Optional[str], traceparent: Optional[str]) -> Awaitable[Any]: ...


class Admin:
    """`Client.admin`: calls for operators, over the client's connection."""

    def __init__(self, client: _Runs) -> None:
        self._client = client

    def set_capacity(self, namespace: str, partition: str, pool: str, capacity: int, *,
                     timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> m.PoolCapacity:
        """Set a pool's capacity (units it may sell in total, sold included) in
        PostgreSQL. FailedPrecondition (field "capacity") below what is sold.
        An absolute value: safe to retry."""
        return self._client._run(m.set_capacity_call(namespace, partition, pool, capacity),
                                 timeout, correlation_id, traceparent)

    def set_default_capacity(self, namespace: str, partition: str, capacity: int, *,
                             timeout: Optional[float] = None,
                             correlation_id: Optional[str] = None,
                             traceparent: Optional[str] = None) -> m.PoolCapacity:
        """Set the partition's default capacity: that of every pool of it with
        none of its own (e.g. 1 for one-per-user pools); its pool is ""."""
        return self._client._run(m.set_capacity_call(namespace, partition, "", capacity,
                                                     partition_default=True),
                                 timeout, correlation_id, traceparent)


class AsyncAdmin:
    """`AsyncClient.admin`: as Admin, awaited."""

    def __init__(self, client: _RunsAsync) -> None:
        self._client = client

    async def set_capacity(self, namespace: str, partition: str, pool: str, capacity: int, *,
                           timeout: Optional[float] = None,
                           correlation_id: Optional[str] = None,
                           traceparent: Optional[str] = None) -> m.PoolCapacity:
        return await self._client._run(m.set_capacity_call(namespace, partition, pool, capacity),
                                       timeout, correlation_id, traceparent)

    async def set_default_capacity(self, namespace: str, partition: str, capacity: int, *,
                                   timeout: Optional[float] = None,
                                   correlation_id: Optional[str] = None,
                                   traceparent: Optional[str] = None) -> m.PoolCapacity:
        return await self._client._run(m.set_capacity_call(namespace, partition, "", capacity,
                                                           partition_default=True),
                                       timeout, correlation_id, traceparent)
