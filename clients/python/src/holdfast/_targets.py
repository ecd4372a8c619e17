"""Targets: what a call acts on (surface.json `targets`).

`Seats(ids, segment=None)`: resource ids of one partition, and the journey
segment whose legs the call acts on (namespaces with max_legs, only there).
`Units({"adult": 2, "child": 1})`: units of pools (a namespace of kind
"pools"); pool names without counts (`Units(["adult"])`) serve Extend,
Release and Status, which send the pools only."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

_MAX_UINT32 = 2**32 - 1


@dataclass(frozen=True)
class Segment:
    """A trip along a line of stops (journey segments, docs/segments.md):
    legs `from_stop` .. `to_stop` - 1, leg k running from stop k to stop k+1.

    In a namespace with `max_legs > 0` every request names one, and answers
    name each leg as "<id>@<leg>" (`"E7@1"`). A `(from_stop, to_stop)` tuple
    works wherever a Segment does."""

    from_stop: int
    to_stop: int

    def __post_init__(self) -> None:
        for name in ("from_stop", "to_stop"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Segment.{name} must be an int, got {v!r}")
            if not 0 <= v <= _MAX_UINT32:
                raise ValueError(f"Segment.{name} must be a stop number >= 0, got {v}")

    def legs(self) -> range:
        """The legs of the trip: from_stop .. to_stop - 1."""
        return range(self.from_stop, self.to_stop)

    def resource_ids(self, ids: Iterable[str]) -> List[str]:
        """The per-leg names the daemon answers with: ["E7@0", "E7@1", ...]."""
        return [f"{i}@{leg}" for i in check_ids(ids) for leg in self.legs()]


SegmentLike = Union[Segment, Tuple[int, int]]


def as_segment(segment: Optional[SegmentLike]) -> Optional[Segment]:
    """None, a Segment, or a (from_stop, to_stop) pair -> Optional[Segment]."""
    if segment is None or isinstance(segment, Segment):
        return segment
    if isinstance(segment, (tuple, list)) and len(segment) == 2:
        return Segment(segment[0], segment[1])
    raise TypeError(f"segment must be a Segment or a (from_stop, to_stop) pair, got {segment!r}")


def check_ids(ids: Iterable[str]) -> List[str]:
    # A bare string is iterable too; "E7" would silently become ["E", "7"],
    # and a mapping of units would become seats named after its pools.
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids must be a sequence of resource ids, not a single string")
    if isinstance(ids, Mapping):
        raise TypeError('units of pools are a target of their own: Units({"adult": 2})')
    return list(ids)


def check_names(names: Iterable[str], what: str = "pools") -> List[str]:
    """Pool names (a mapping of units gives its pools)."""
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of pool names, not a single string")
    return list(names)


class Target:
    """What a call acts on: `Seats` or `Units`."""

    __slots__ = ()

    def put(self, msg: Any, counts: bool = False) -> Any:
        """Fill `msg`'s target fields; `counts`: the call sends units with
        their counts (Hold, Confirm, Cancel), not the pools alone."""
        raise NotImplementedError


@dataclass(frozen=True, init=False, repr=False)
class Seats(Target):
    """Seat ids of one partition, optionally on a journey segment (a Segment
    or a (from_stop, to_stop) pair): `Seats(["E7", "E8"])`,
    `Seats(["E7"], segment=(0, 2))`."""

    ids: Tuple[str, ...]
    segment: Optional[Segment]

    def __init__(self, ids: Iterable[str], segment: Optional[SegmentLike] = None) -> None:
        object.__setattr__(self, "ids", tuple(check_ids(ids)))
        object.__setattr__(self, "segment", as_segment(segment))

    def put(self, msg: Any, counts: bool = False) -> Any:
        msg.ids.extend(self.ids)
        # Unset on the wire when None: namespaces without legs refuse one.
        if self.segment is not None:
            msg.segment.from_stop = self.segment.from_stop
            msg.segment.to_stop = self.segment.to_stop
        return msg

    def __repr__(self) -> str:
        seg = self.segment
        return f"Seats({list(self.ids)!r}" + (
            f", segment=({seg.from_stop}, {seg.to_stop}))" if seg else ")")


UnitsLike = Union[Mapping[str, int], Iterable[Tuple[str, int]], Iterable[str]]


@dataclass(frozen=True, init=False, repr=False)
class Units(Target):
    """Units of pools, in the order given: `Units({"adult": 2, "child": 1})`
    or (pool, count) pairs. Pool names alone, `Units(["adult", "child"])`,
    serve the calls that send only the pools (Extend, Release, Status);
    Hold, Confirm and Cancel need the counts."""

    pools: Tuple[str, ...]
    _counts: Optional[Tuple[int, ...]]  # None: names only

    def __init__(self, units: UnitsLike) -> None:
        if isinstance(units, (str, bytes)):
            raise TypeError('units are {"adult": 2} (or pool names), not a string')
        pairs = list(units.items()) if isinstance(units, Mapping) else list(units)
        counts: Optional[Tuple[int, ...]] = None
        if pairs and all(isinstance(p, str) for p in pairs):
            pools = tuple(pairs)
        else:
            checked = [_pair(p) for p in pairs]
            pools, counts = tuple(p for p, _ in checked), tuple(c for _, c in checked)
        object.__setattr__(self, "pools", pools)
        object.__setattr__(self, "_counts", counts)

    @property
    def counts(self) -> Optional[Dict[str, int]]:
        """{pool: count} in the order given; None when only names were given."""
        return None if self._counts is None else dict(zip(self.pools, self._counts))

    def put(self, msg: Any, counts: bool = False) -> Any:
        if not counts:
            msg.pools.extend(self.pools)
        elif self._counts is None:
            raise TypeError('this call needs units with counts, e.g. Units({"adult": 2}), '
                            "not pool names")
        else:
            for pool, count in zip(self.pools, self._counts):
                msg.units.add(pool=pool, count=count)
        return msg

    def __repr__(self) -> str:
        return f"Units({self.counts if self._counts is not None else list(self.pools)!r})"


def _pair(pair: Any) -> Tuple[str, int]:
    if isinstance(pair, (str, bytes)) or len(pair) != 2:
        raise TypeError(f"units must be (pool, count) pairs, got {pair!r}")
    pool, count = pair
    if not isinstance(pool, str):
        raise TypeError(f"a pool name must be a str, got {pool!r}")
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"the count of pool {pool!r} must be an int, got {count!r}")
    if not 0 <= count <= _MAX_UINT32:
        raise ValueError(f"the count of pool {pool!r} is out of range: {count}")
    return pool, count


TargetLike = Union[Target, Iterable[str]]  # a plain sequence of ids: Seats


def as_target(target: TargetLike, segment: Optional[SegmentLike] = None) -> Target:
    """A Target as given, or the Seats of a sequence of ids. `segment` is the
    deprecated keyword of the calls that took ids and a segment apart."""
    if segment is not None:
        # stacklevel 3: the caller of the client's method.
        warnings.warn("the segment= keyword is deprecated: pass Seats(ids, segment)",
                      DeprecationWarning, stacklevel=3)
        if isinstance(target, Target):
            raise TypeError("segment= goes with a list of ids; a target carries its own: "
                            "Seats(ids, segment)")
        return Seats(target, segment)
    return target if isinstance(target, Target) else Seats(target)
