"""Clients of the chaos run: each a thread with its own connection, looping
hold -> confirm -> sometimes cancel over a few seats, with idempotency keys
that are sometimes retried (the same request, with the same token or after
re-holding) and now and then reused for a different request. Every request
sent is recorded as a checker.Op, answered or not."""
import socket
import threading
import time

from checker import DEFINITE, NOT_DEFINITE, Op
from harness import Client, code_name, pb

NS = "seat"


class Purchase:
    def __init__(self, key, partition, ids, reference, payload):
        self.key, self.partition, self.ids = key, partition, tuple(ids)
        self.reference, self.payload = reference, payload
        self.token, self.fence = None, None
        self.tries = 0


class Worker(threading.Thread):
    def __init__(self, n, socket_path, history, rnd, stop_at, t0, partitions, seats):
        super().__init__(name="client-%d" % n, daemon=True)
        self.n = n
        self.path = socket_path
        self.history = history
        self.rnd = rnd
        self.stop_at = stop_at
        self.t0 = t0
        self.partitions = partitions
        self.seats = seats
        self.c = None
        self.seq = 0
        self.retry = []        # purchases to confirm again with the same key
        self.used_keys = []    # for reuse with another request
        self.tokens = set()
        self.late = []         # requests answered late (15 s) or answered wrongly
        self.error = None

    # ---- plumbing ----

    def connect(self):
        while time.monotonic() < self.stop_at:
            try:
                self.c = Client(self.path, timeout=15)
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def drop(self):
        if self.c is not None:
            self.c.close()
            self.c = None

    def request(self, op, timeout_ms, **fields):
        """Send one request and record it; returns (Op, response or None)."""
        self.seq += 1
        cid = "c%d-%d" % (self.n, self.seq)
        rec = Op(client=self.n, op=op.op, ns=op.ns, partition=op.partition, ids=op.ids,
                 key=op.key, reference=op.reference, payload=op.payload, fence=op.fence,
                 cid=cid, token=op.token)
        rec.start = time.monotonic() - self.t0
        resp = None
        try:
            if self.c is None and not self.connect():
                return None, None
            resp = self.c.call(timeout_ms=timeout_ms, correlation_id=cid, **fields)
        except socket.timeout:
            rec.code, rec.message = "NO_ANSWER", "no answer within 15 s"
            self.late.append(rec)
            self.drop()
        except AssertionError as e:  # an answer to another request
            rec.code, rec.message = "NO_ANSWER", repr(e)
            self.late.append(rec)
            self.drop()
        except (OSError, ConnectionError) as e:
            rec.code, rec.message = "NO_ANSWER", repr(e)
            self.drop()
        rec.end = time.monotonic() - self.t0
        if resp is not None:
            rec.code = code_name(resp.code)
            rec.message = resp.message
            if resp.HasField("confirm"):
                rec.replayed = resp.confirm.replayed
                rec.result_fence = resp.confirm.fence
                rec.rows = tuple((c.resource_id, c.fence) for c in resp.confirm.claims)
            elif resp.HasField("cancel"):
                rec.replayed = resp.cancel.replayed
                rec.count = resp.cancel.cancelled
            elif resp.HasField("hold") and rec.code == "OK":
                rec.fence = resp.hold.fence
                self.tokens.add(resp.hold.token)
            elif rec.code != "OK":
                rec.replayed = "(replayed)" in resp.message
        self.history.append(rec)
        return rec, resp

    # ---- operations ----

    def hold(self, partition, ids, with_code=False):
        op = Op(self.n, "hold", NS, partition, tuple(ids))
        rec, resp = self.request(op, self.rnd.choice((300, 1000, 2000)),
                                 hold=pb().HoldRequest(namespace=NS, partition=partition,
                                                       ids=ids,
                                                       ttl_ms=self.rnd.choice((300, 1000, 3000))))
        if rec and rec.code == "OK":
            out = resp.hold.token, resp.hold.fence
        else:
            out = None, None
        return out + ((rec and rec.code),) if with_code else out

    def release(self, p):
        op = Op(self.n, "release", NS, p.partition, p.ids, fence=p.fence, token=p.token)
        self.request(op, 1000, release=pb().ReleaseRequest(namespace=NS, partition=p.partition,
                                                          ids=p.ids, token=p.token))

    def confirm(self, p, timeout_ms=None):
        op = Op(self.n, "confirm", NS, p.partition, p.ids, key=p.key, reference=p.reference,
                payload=p.payload, fence=p.fence, token=p.token)
        rec, _ = self.request(op, timeout_ms or self.rnd.choice((300, 1000, 2000)),
                              confirm=pb().ConfirmRequest(
                                  namespace=NS, partition=p.partition, ids=p.ids, token=p.token,
                                  idempotency_key=p.key, reference=p.reference,
                                  payload=p.payload))
        return rec.code if rec else None

    def cancel(self, p, ids=None, reference=None):
        """A refund of order `reference` (the purchase's own by default);
        a Cancel is all or nothing and scoped to that order."""
        self.seq += 1
        key = "x%d-%d" % (self.n, self.seq)
        ids = ids or p.ids
        if len(ids) > 1 and self.rnd.random() < 0.3:
            ids = (self.rnd.choice(ids),)
        op = Op(self.n, "cancel", NS, p.partition, ids, key=key,
                reference=reference or p.reference)
        for attempt in range(4):
            rec, _ = self.request(op, self.rnd.choice((1000, 2000)),
                                  cancel=pb().CancelRequest(namespace=NS, partition=p.partition,
                                                            ids=ids, idempotency_key=key,
                                                            reference=op.reference))
            if rec is None or rec.code in DEFINITE:
                return
            time.sleep(0.05 * (attempt + 1))

    def after_confirm(self, p, code):
        if code is None:
            return
        if code in NOT_DEFINITE:
            if p.tries < 6:
                self.retry.append(p)
        elif self.rnd.random() < 0.08 and len(self.retry) < 20:
            self.retry.append(p)  # a retry after a definite answer: it must replay
        if code == "OK" and self.rnd.random() < 0.6:
            self.cancel(p)
        elif code == "CONFLICT" and self.rnd.random() < 0.3:
            # A refund of whoever holds the seat now, under this (wrong)
            # order: it must be refused, nothing cancelled.
            self.cancel(p)
        self.used_keys.append(p.key)
        del self.used_keys[:-50]

    def new_purchase(self):
        rnd = self.rnd
        self.seq += 1
        partition = rnd.choice(self.partitions)
        ids = sorted(rnd.sample(self.seats, rnd.choice((1, 1, 2))))
        if self.used_keys and rnd.random() < 0.03:
            key = rnd.choice(self.used_keys)  # another request under a used key
        else:
            key = "k%d-%d" % (self.n, self.seq)
        p = Purchase(key, partition, ids, "order-%d-%d" % (self.n, self.seq),
                     b"p%d" % self.seq)
        p.token, p.fence, code = self.hold(partition, ids, with_code=True)
        if p.token is None:
            if code == "CONFIRMED" and rnd.random() < 0.1:
                self.cancel(p)  # a refund, by someone else than the buyer
            time.sleep(rnd.uniform(0.01, 0.05))
            return
        r = rnd.random()
        if r < 0.1:
            self.release(p)
            return
        if r < 0.25:
            time.sleep(rnd.uniform(0, 0.4))  # the hold may expire meanwhile
        self.after_confirm(p, self.confirm(p))

    def retry_purchase(self, p):
        p.tries += 1
        if self.rnd.random() < 0.5:
            token, fence = self.hold(p.partition, list(p.ids))
            if token is not None:
                p.token, p.fence = token, fence
        self.after_confirm(p, self.confirm(p))

    def run(self):
        try:
            while time.monotonic() < self.stop_at:
                if self.retry and self.rnd.random() < 0.2:
                    self.retry_purchase(self.retry.pop(self.rnd.randrange(len(self.retry))))
                else:
                    self.new_purchase()
                time.sleep(self.rnd.uniform(0, 0.01))
        except Exception:
            import traceback
            self.error = traceback.format_exc()
        finally:
            self.drop()
