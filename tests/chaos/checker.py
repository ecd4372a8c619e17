"""Checker for the chaos run: a history of operations (what every client was
answered) and a snapshot of the final tables, checked against the
invariants of docs/confirm.md.

Pure functions over plain data, so that tests/chaos/test_checker.py can
plant each kind of violation in a synthetic history and snapshot.

History: a list of Op (one per request sent, answered or not).
Snapshot: a dict of lists of dicts, as read from holdfast.*:
  claims       {ns, partition, resource, fence, key}
  cancelled    {id, ns, partition, resource, fence, key, cancel_key}  (by id)
  fences       {ns, partition, resource, fence}
  idempotency  {ns, key, op, code, rows: [{resource, fence}]}

Invariants (Violation.kind):
  two_live_claims       at most one live claim per seat
  ok_without_rows       every OK confirm has its rows, live or cancelled
                        (the ids it was asked for, with the fence it answered)
  claim_unexplained     every claim row comes from a confirm in the history
                        with that key, that resource and that token's fence
  claim_from_failed_key no claim row under a key whose request was answered
                        a definite failure (HOLD_LOST, CONFLICT, STALE,
                        IDEMPOTENCY_MISMATCH, CONFIRMED)
  two_definite_answers  one key never gets two different definite answers
                        (per request; and at most one request per key gets
                        anything but IDEMPOTENCY_MISMATCH; OK answers for one
                        key name one fence)
  partial_claim         all or nothing: the rows of a key are all the ids of
                        its request, with one fence, each once
  fence_order           fences strictly increase per seat across successive
                        claims (cancelled ones in cancel order, then the live one)
  fence_table_behind    the fence table is not below any claim's fence
  idempotency_record    the key's record holds its definite answer's code;
                        no record is left PENDING
  record_without_rows   an OK confirm record's rows exist (live or cancelled)
  cancel_without_rows   an OK cancel's count is the number of rows in
                        cancelled_claims under its key
  cancel_unexplained    a cancelled row's cancel key is a cancel in the history
                        that named that resource
"""
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Tuple

DEFINITE = frozenset({"OK", "HOLD_LOST", "CONFIRMED", "CONFLICT", "STALE",
                      "IDEMPOTENCY_MISMATCH", "NOT_FOUND"})
FAILURES = DEFINITE - {"OK"}
NOT_DEFINITE = frozenset({"DEADLINE_EXCEEDED", "UNAVAILABLE", "NO_ANSWER"})
MISMATCH = "IDEMPOTENCY_MISMATCH"
# A scoped Cancel's refusals are stored under their own names and answered
# with these codes (migration 0004): an id without a claim, or claimed under
# another reference.
RECORD_ANSWER = {"NOT_CLAIMED": "NOT_FOUND", "OTHER_REFERENCE": "CONFLICT"}


@dataclass
class Op:
    client: int
    op: str                       # hold | confirm | cancel | release
    ns: str
    partition: str
    ids: Tuple[str, ...]
    key: Optional[str] = None     # confirm, cancel
    reference: str = ""
    payload: bytes = b""
    fence: Optional[int] = None   # confirm/release: the token's fence; hold: granted fence
    start: float = 0.0
    end: float = 0.0
    code: Optional[str] = None    # answer code; NO_ANSWER when none came
    replayed: bool = False
    result_fence: Optional[int] = None           # confirm OK: the fence answered
    rows: Tuple[Tuple[str, int], ...] = ()       # confirm OK: (resource, fence)
    count: Optional[int] = None                  # cancel OK: how many were cancelled
    cid: str = ""
    message: str = field(default="", repr=False)
    token: str = field(default="", repr=False)   # for retries and probes; never checked

    def request(self):
        """What an idempotency key is bound to (not the token, not the fence)."""
        return (self.op, self.ns, self.partition, frozenset(self.ids), self.reference,
                self.payload)

    def brief(self):
        ids = ",".join(self.ids)
        what = "%s %s/%s [%s]" % (self.op, self.ns, self.partition, ids)
        if self.key:
            what += " key=%s" % self.key
        if self.fence is not None:
            what += " fence=%s" % self.fence
        res = self.code or "?"
        if self.replayed:
            res += " (replayed)"
        if self.result_fence is not None:
            res += " fence=%s" % self.result_fence
        if self.rows:
            res += " rows=%s" % list(self.rows)
        if self.count is not None:
            res += " cancelled=%d" % self.count
        return "t=%.3f-%.3f c%s %s %s -> %s" % (self.start, self.end, self.client, self.cid,
                                                  what, res)


class Violation(NamedTuple):
    kind: str
    subject: str     # the key or the seat
    detail: str
    ops: tuple = ()  # the operations involved, in start order

    def report(self):
        lines = ["%s: %s: %s" % (self.kind, self.subject, self.detail)]
        lines += ["    " + op.brief() for op in self.ops]
        return "\n".join(lines)


def _seat(row):
    return (row["ns"], row["partition"], row["resource"])


def check(history, snapshot):
    """Every violation found, as a list of Violation (empty: all invariants hold)."""
    out = []
    claims = snapshot.get("claims", [])
    cancelled = sorted(snapshot.get("cancelled", []), key=lambda r: r["id"])
    fences = snapshot.get("fences", [])
    records = {(r["ns"], r["key"]): r for r in snapshot.get("idempotency", [])}

    by_key = defaultdict(list)      # (ns, key) -> ops, confirm and cancel
    for op in history:
        if op.op in ("confirm", "cancel") and op.key is not None:
            by_key[(op.ns, op.key)].append(op)
    for ops in by_key.values():
        ops.sort(key=lambda o: o.start)

    def key_ops(ns, key):
        return tuple(by_key.get((ns, key), ()))

    # -- at most one live claim per seat
    for seat, n in Counter(_seat(r) for r in claims).items():
        if n > 1:
            out.append(Violation("two_live_claims", "/".join(seat),
                                 "%d live claims: %s" % (n, [r for r in claims if _seat(r) == seat])))

    # -- rows per confirm key (live and cancelled)
    rows_by_key = defaultdict(list)  # (ns, key) -> [(partition, resource, fence, where)]
    for r in claims:
        rows_by_key[(r["ns"], r["key"])].append((r["partition"], r["resource"], r["fence"], "live"))
    for r in cancelled:
        rows_by_key[(r["ns"], r["key"])].append((r["partition"], r["resource"], r["fence"],
                                                 "cancelled"))

    # -- answers per key
    bound_answer = {}  # (ns, key) -> (request, code) of the request the key is bound to
    for (ns, key), ops in sorted(by_key.items()):
        per_request = defaultdict(list)
        for op in ops:
            per_request[op.request()].append(op)
        holders = []
        for req, rops in per_request.items():
            codes = {o.code for o in rops if o.code in DEFINITE}
            if len(codes) > 1:
                out.append(Violation("two_definite_answers", key,
                                     "one request, answers %s" % sorted(codes), tuple(rops)))
            fences_ok = {o.result_fence for o in rops if o.code == "OK" and o.op == "confirm"}
            if len(fences_ok) > 1:
                out.append(Violation("two_definite_answers", key,
                                     "OK answers with different fences %s" % sorted(fences_ok),
                                     tuple(rops)))
            counts = {o.count for o in rops if o.code == "OK" and o.op == "cancel"}
            if len(counts) > 1:
                out.append(Violation("two_definite_answers", key,
                                     "OK answers with different counts %s" % sorted(counts),
                                     tuple(rops)))
            decided = codes - {MISMATCH}
            if decided:
                holders.append((req, sorted(decided)[0]))
        if len(holders) > 1:
            out.append(Violation("two_definite_answers", key,
                                 "bound to %d different requests: %s"
                                 % (len(holders), [c for _, c in holders]), tuple(ops)))
        if len(holders) == 1:
            bound_answer[(ns, key)] = holders[0]
            req, code = holders[0]
            rec = records.get((ns, key))
            if rec is None or rec["op"] != req[0] or \
                    RECORD_ANSWER.get(rec["code"], rec["code"]) != code:
                out.append(Violation("idempotency_record", key,
                                     "answered %s %s, record %s"
                                     % (req[0], code, rec and (rec["op"], rec["code"])),
                                     tuple(ops)))

    for (ns, key), rec in sorted(records.items()):
        if rec["code"] == "PENDING":
            out.append(Violation("idempotency_record", key, "record left PENDING",
                                 key_ops(ns, key)))

    # -- every OK confirm has its rows
    for (ns, key), ops in sorted(by_key.items()):
        have = {(p, res, f) for p, res, f, _ in rows_by_key.get((ns, key), ())}
        for op in ops:
            if op.op != "confirm" or op.code != "OK":
                continue
            missing = [i for i in op.ids if (op.partition, i, op.result_fence) not in have]
            if missing:
                out.append(Violation("ok_without_rows", key,
                                     "answered OK (fence %s) but no row for %s"
                                     % (op.result_fence, missing), tuple(ops)))
                break

    # -- every claim row: explained, from a key not failed, all or nothing
    for (ns, key), rows in sorted(rows_by_key.items()):
        ops = key_ops(ns, key)
        confirms = [o for o in ops if o.op == "confirm"]
        rfences = {f for _, _, f, _ in rows}
        resources = Counter((p, res) for p, res, _, _ in rows)
        explaining = None
        for p, res, f, where in rows:
            ex = [o for o in confirms if o.partition == p and res in o.ids and o.fence == f]
            if not ex:
                out.append(Violation("claim_unexplained", key,
                                     "%s claim %s/%s fence %s: no confirm with this key, "
                                     "resource and token fence" % (where, p, res, f), ops))
            elif explaining is None:
                explaining = ex[0]
        if explaining is not None:
            failed = [o for o in confirms
                      if o.request() == explaining.request() and o.code in FAILURES]
            if failed:
                out.append(Violation("claim_from_failed_key", key,
                                     "rows %s, yet the request was answered %s"
                                     % (sorted((p, r) for p, r, _, _ in rows),
                                        sorted({o.code for o in failed})), ops))
            want = {(explaining.partition, i) for i in explaining.ids}
            if set(resources) != want:
                out.append(Violation("partial_claim", key,
                                     "rows for %s, the request named %s"
                                     % (sorted(resources), sorted(want)), ops))
        if len(rfences) > 1:
            out.append(Violation("partial_claim", key,
                                 "rows with different fences %s (committed twice?)"
                                 % sorted(rfences), ops))
        dup = sorted(k for k, n in resources.items() if n > 1)
        if dup:
            out.append(Violation("partial_claim", key,
                                 "resources claimed more than once under one key: %s" % dup,
                                 ops))

    # -- OK confirm records have their rows
    for (ns, key), rec in sorted(records.items()):
        if rec["op"] != "confirm" or rec["code"] != "OK":
            continue
        have = {(res, f) for _, res, f, _ in rows_by_key.get((ns, key), ())}
        want = {(r["resource"], r["fence"]) for r in rec.get("rows", [])}
        if not want or not want <= have:
            out.append(Violation("record_without_rows", key,
                                 "record OK with rows %s, tables have %s"
                                 % (sorted(want), sorted(have)), key_ops(ns, key)))

    # -- fences per seat
    sequence = defaultdict(list)  # seat -> [(fence, where, key)]
    for r in cancelled:
        sequence[_seat(r)].append((r["fence"], "cancelled#%s" % r["id"], r["key"]))
    for r in claims:
        sequence[_seat(r)].append((r["fence"], "live", r["key"]))
    for seat, seq in sorted(sequence.items()):
        for (f1, w1, k1), (f2, w2, k2) in zip(seq, seq[1:]):
            if not f2 > f1:
                ops = tuple(sorted(key_ops(seat[0], k1) + key_ops(seat[0], k2),
                                   key=lambda o: o.start))
                out.append(Violation("fence_order", "/".join(seat),
                                     "claim fence %s (%s, key %s) followed by fence %s (%s, key %s)"
                                     % (f1, w1, k1, f2, w2, k2), ops))
    table = {_seat(r): r["fence"] for r in fences}
    for seat, seq in sorted(sequence.items()):
        top = max(f for f, _, _ in seq)
        if table.get(seat, 0) < top:
            out.append(Violation("fence_table_behind", "/".join(seat),
                                 "fence table %s < claim fence %s" % (table.get(seat), top)))

    # -- cancels
    cancelled_by_key = defaultdict(list)
    for r in cancelled:
        cancelled_by_key[(r["ns"], r["cancel_key"])].append((r["partition"], r["resource"]))
    for (ns, key), ops in sorted(by_key.items()):
        for op in ops:
            if op.op != "cancel" or op.code != "OK":
                continue
            have = len(cancelled_by_key.get((ns, key), ()))
            if have != op.count:
                out.append(Violation("cancel_without_rows", key,
                                     "answered OK, %s cancelled; cancelled_claims has %d rows"
                                     " under this key" % (op.count, have), tuple(ops)))
                break
    for (ns, key), rows in sorted(cancelled_by_key.items()):
        cancels = [o for o in key_ops(ns, key) if o.op == "cancel"]
        for p, res in sorted(rows):
            if not any(o.partition == p and res in o.ids for o in cancels):
                out.append(Violation("cancel_unexplained", key,
                                     "cancelled %s/%s under this key, no such cancel in the history"
                                     % (p, res), tuple(cancels)))
    return out


def summary(history):
    """Counts of (op, code) for the report."""
    return Counter((o.op, o.code) for o in history)
