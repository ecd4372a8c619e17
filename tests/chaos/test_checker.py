"""The chaos checker on synthetic histories: a clean one passes, and each
kind of violation planted in it is reported."""
import copy

import pytest

from checker import Op, check

NS, P = "seat", "p1"


def op(client, kind, ids, key=None, fence=None, code="OK", t=0.0, **kw):
    return Op(client=client, op=kind, ns=NS, partition=P, ids=tuple(ids), key=key,
              reference=key or "", fence=fence, start=t, end=t + 0.01, code=code, **kw)


def ok_confirm(client, ids, key, fence, t, result_fence=None, replayed=False):
    f = result_fence if result_fence is not None else fence
    return op(client, "confirm", ids, key, fence, "OK", t, replayed=replayed, result_fence=f,
              rows=tuple((i, f) for i in ids))


def clean():
    """Seats a, b, c of seat/p1: a and b claimed by k1, both cancelled; a
    then claimed by k2 (after a deadline), b by k3 (in doubt, then replayed
    after re-holding); k4 conflicted, k5 lost its hold, k2 reused for
    another request, k7 never answered."""
    history = [
        op(1, "hold", ["a", "b"], fence=10, t=1),
        ok_confirm(1, ["a", "b"], "k1", 10, t=2),
        op(1, "cancel", ["a", "b"], "x1", t=3, count=2),
        op(2, "hold", ["a"], fence=20, t=4),
        op(2, "confirm", ["a"], "k2", 20, "DEADLINE_EXCEEDED", t=5),
        ok_confirm(2, ["a"], "k2", 20, t=6, replayed=True),
        op(3, "hold", ["b"], fence=25, t=4),
        op(3, "confirm", ["b"], "k3", 25, "UNAVAILABLE", t=5),
        op(3, "hold", ["b"], fence=30, t=7),
        ok_confirm(3, ["b"], "k3", 30, t=8, result_fence=25, replayed=True),
        op(4, "hold", ["a"], fence=40, t=9),
        op(4, "confirm", ["a"], "k4", 40, "CONFLICT", t=10),
        op(4, "confirm", ["a"], "k4", 40, "CONFLICT", t=11, replayed=True),
        op(5, "hold", ["c"], fence=50, t=9),
        op(5, "confirm", ["c"], "k5", 50, "HOLD_LOST", t=10),
        op(5, "confirm", ["c"], "k5", 50, "HOLD_LOST", t=11, replayed=True),
        op(6, "hold", ["c"], fence=55, t=12),
        op(6, "confirm", ["c"], "k2", 55, "IDEMPOTENCY_MISMATCH", t=13),
        op(7, "hold", ["c"], fence=60, t=14),
        op(7, "confirm", ["c"], "k7", 60, "NO_ANSWER", t=15),
        op(7, "release", ["c"], fence=60, code="NOT_HELD", t=16),
    ]
    snapshot = {
        "claims": [
            {"ns": NS, "partition": P, "resource": "a", "fence": 20, "key": "k2"},
            {"ns": NS, "partition": P, "resource": "b", "fence": 25, "key": "k3"},
        ],
        "cancelled": [
            {"id": 1, "ns": NS, "partition": P, "resource": "a", "fence": 10, "key": "k1",
             "cancel_key": "x1"},
            {"id": 2, "ns": NS, "partition": P, "resource": "b", "fence": 10, "key": "k1",
             "cancel_key": "x1"},
        ],
        "fences": [
            {"ns": NS, "partition": P, "resource": "a", "fence": 20},
            {"ns": NS, "partition": P, "resource": "b", "fence": 25},
        ],
        "idempotency": [
            {"ns": NS, "key": "k1", "op": "confirm", "code": "OK",
             "rows": [{"resource": "a", "fence": 10}, {"resource": "b", "fence": 10}]},
            {"ns": NS, "key": "x1", "op": "cancel", "code": "OK",
             "rows": [{"resource": "a", "fence": 10}, {"resource": "b", "fence": 10}]},
            {"ns": NS, "key": "k2", "op": "confirm", "code": "OK",
             "rows": [{"resource": "a", "fence": 20}]},
            {"ns": NS, "key": "k3", "op": "confirm", "code": "OK",
             "rows": [{"resource": "b", "fence": 25}]},
            {"ns": NS, "key": "k4", "op": "confirm", "code": "CONFLICT",
             "rows": [{"resource": "a", "fence": None}]},
            {"ns": NS, "key": "k5", "op": "confirm", "code": "HOLD_LOST",
             "rows": [{"resource": "c", "fence": None}]},
        ],
    }
    return history, snapshot


def kinds(history, snapshot):
    return {v.kind for v in check(history, snapshot)}


def test_clean_history_passes():
    history, snapshot = clean()
    assert check(history, snapshot) == []


def test_empty_history_passes():
    assert check([], {}) == []


def row(resource, fence, key):
    return {"ns": NS, "partition": P, "resource": resource, "fence": fence, "key": key}


def plant_two_live_claims(h, s):
    # Rows as a table without its primary key would hold them.
    h.append(ok_confirm(8, ["a"], "k8", 70, t=20))
    s["claims"].append(row("a", 70, "k8"))
    s["idempotency"].append({"ns": NS, "key": "k8", "op": "confirm", "code": "OK",
                             "rows": [{"resource": "a", "fence": 70}]})
    s["fences"][0]["fence"] = 70


def plant_ok_without_rows(h, s):
    # k2 was answered OK (replayed), but its claim is not there.
    del s["claims"][0]


def plant_claim_unexplained(h, s):
    s["claims"].append(row("c", 1, "nemesis"))
    s["fences"].append({"ns": NS, "partition": P, "resource": "c", "fence": 1})


def plant_claim_from_failed_key(h, s):
    # Issue 9: k5 was answered HOLD_LOST, and its first attempt then committed.
    s["claims"].append(row("c", 50, "k5"))
    s["fences"].append({"ns": NS, "partition": P, "resource": "c", "fence": 50})


def plant_two_answers_one_request(h, s):
    h.append(ok_confirm(5, ["c"], "k5", 50, t=30, replayed=True))


def plant_key_bound_to_two_requests(h, s):
    # The request that was answered IDEMPOTENCY_MISMATCH under k2 gets a
    # result of its own as well.
    h.append(op(6, "confirm", ["c"], "k2", 55, "CONFLICT", t=31))


def plant_ok_answers_with_two_fences(h, s):
    h.append(ok_confirm(3, ["b"], "k3", 30, t=32, result_fence=30, replayed=True))


def plant_cancel_answers_with_two_counts(h, s):
    h.append(op(1, "cancel", ["a", "b"], "x1", t=33, count=1, replayed=True))


def plant_partial_claim(h, s):
    # k1 claimed a and b; b's row is gone from the history of cancels.
    del s["cancelled"][1]


def plant_claim_with_two_fences(h, s):
    # k1 committed twice: once with fence 10, once with a later token.
    h.append(op(1, "hold", ["c"], fence=11, t=2.5))
    h.append(op(1, "confirm", ["a", "b"], "k1", 11, "UNAVAILABLE", t=2.6))
    s["cancelled"][1]["fence"] = 11


def plant_fence_order(h, s):
    # A stale holder (fence 5) confirmed after the fence-10 claim was
    # cancelled, and was then cancelled itself.
    h.append(op(8, "hold", ["a"], fence=5, t=0.5))
    h.append(ok_confirm(8, ["a"], "k8", 5, t=3.5))
    h.append(op(8, "cancel", ["a"], "x2", t=3.6, count=1))
    s["cancelled"].append({"id": 3, "ns": NS, "partition": P, "resource": "a", "fence": 5,
                           "key": "k8", "cancel_key": "x2"})
    s["idempotency"] += [
        {"ns": NS, "key": "k8", "op": "confirm", "code": "OK",
         "rows": [{"resource": "a", "fence": 5}]},
        {"ns": NS, "key": "x2", "op": "cancel", "code": "OK",
         "rows": [{"resource": "a", "fence": 5}]}]


def plant_fence_table_behind(h, s):
    s["fences"][0]["fence"] = 15


def plant_record_code_differs(h, s):
    s["idempotency"][4]["code"] = "HOLD_LOST"  # k4 was answered CONFLICT


def plant_record_missing(h, s):
    del s["idempotency"][5]  # k5 was answered HOLD_LOST


def plant_record_pending(h, s):
    s["idempotency"].append({"ns": NS, "key": "k7", "op": "confirm", "code": "PENDING",
                             "rows": []})


def plant_record_without_rows(h, s):
    s["idempotency"][2]["rows"] = [{"resource": "a", "fence": 21}]


def plant_cancel_without_rows(h, s):
    h.append(op(1, "cancel", ["a", "b"], "x3", t=40, count=1))


def plant_cancel_unexplained(h, s):
    s["cancelled"][0]["cancel_key"] = "ghost"


PLANTS = [
    ("two_live_claims", plant_two_live_claims),
    ("ok_without_rows", plant_ok_without_rows),
    ("claim_unexplained", plant_claim_unexplained),
    ("claim_from_failed_key", plant_claim_from_failed_key),
    ("two_definite_answers", plant_two_answers_one_request),
    ("two_definite_answers", plant_key_bound_to_two_requests),
    ("two_definite_answers", plant_ok_answers_with_two_fences),
    ("two_definite_answers", plant_cancel_answers_with_two_counts),
    ("partial_claim", plant_partial_claim),
    ("partial_claim", plant_claim_with_two_fences),
    ("fence_order", plant_fence_order),
    ("fence_table_behind", plant_fence_table_behind),
    ("idempotency_record", plant_record_code_differs),
    ("idempotency_record", plant_record_missing),
    ("idempotency_record", plant_record_pending),
    ("record_without_rows", plant_record_without_rows),
    ("cancel_without_rows", plant_cancel_without_rows),
    ("cancel_unexplained", plant_cancel_unexplained),
]


@pytest.mark.parametrize("kind,plant", PLANTS, ids=[p.__name__[6:] for _, p in PLANTS])
def test_planted_violation_is_reported(kind, plant):
    history, snapshot = clean()
    history, snapshot = copy.deepcopy(history), copy.deepcopy(snapshot)
    plant(history, snapshot)
    found = check(history, snapshot)
    assert kind in {v.kind for v in found}, [v.report() for v in found]


def test_issue_9_history_is_reported_with_its_sequence():
    """The bug of issue 9 as the chaos run would record it: HOLD_LOST to
    attempt 2, then attempt 1 commits and attempt 3 replays OK."""
    history = [
        op(1, "hold", ["s1"], fence=7, t=0),
        op(1, "confirm", ["s1"], "K", 7, "NO_ANSWER", t=1, cid="a1"),
        op(2, "confirm", ["s1"], "K", 7, "HOLD_LOST", t=2, cid="a2"),
        ok_confirm(2, ["s1"], "K", 7, t=3, replayed=True),
    ]
    history[-1].cid = "a3"
    snapshot = {
        "claims": [row("s1", 7, "K")],
        "fences": [{"ns": NS, "partition": P, "resource": "s1", "fence": 7}],
        "idempotency": [{"ns": NS, "key": "K", "op": "confirm", "code": "OK",
                         "rows": [{"resource": "s1", "fence": 7}]}],
    }
    found = check(history, snapshot)
    assert {v.kind for v in found} == {"two_definite_answers", "claim_from_failed_key",
                                       "idempotency_record"}
    report = next(v for v in found if v.kind == "two_definite_answers").report()
    lines = report.splitlines()
    assert "['HOLD_LOST', 'OK']" in lines[0]
    assert [ln.split()[2] for ln in lines[1:]] == ["a1", "a2", "a3"]
