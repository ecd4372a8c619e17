"""W3C trace context for requests (the client contract's "Trace context").

A request's `traceparent` is the one passed for the call (sent as given; an
empty one means none), else the current OpenTelemetry span's, when the
OpenTelemetry API (`opentelemetry-api`, the `otel` extra) is installed; else
none. OpenTelemetry is never required: without it nothing is imported and
nothing changes."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional

_lock = threading.Lock()
_loaded = False
_inject: Optional[Callable[[Dict[str, str]], None]] = None


def _load() -> Optional[Callable[[Dict[str, str]], None]]:
    """The W3C propagator's inject, bound to the current context; None without
    the OpenTelemetry API. Imported once, on the first call that needs it."""
    global _loaded, _inject
    if _loaded:
        return _inject
    with _lock:
        if not _loaded:
            try:
                # The W3C propagator itself, not the application's global one:
                # the daemon reads traceparent, whatever else is configured.
                from opentelemetry.trace.propagation.tracecontext import (
                    TraceContextTextMapPropagator)
            except ImportError:
                _inject = None
            else:
                _inject = TraceContextTextMapPropagator().inject
            _loaded = True
    return _inject


def current_traceparent() -> str:
    """The current OpenTelemetry span's traceparent, or "" (no API, no valid
    span context)."""
    inject = _load()
    if inject is None:
        return ""
    carrier: Dict[str, Any] = {}
    try:
        inject(carrier)
    except Exception:  # a tracing problem must never fail a call
        return ""
    tp = carrier.get("traceparent", "")
    return tp if isinstance(tp, str) else ""


def traceparent_for(explicit: Optional[str]) -> str:
    """The request's traceparent: the call's own (even ""), else OpenTelemetry's."""
    if explicit is not None:
        if not isinstance(explicit, str):
            raise TypeError("traceparent must be a str")
        return explicit
    return current_traceparent()
