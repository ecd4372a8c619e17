#!/usr/bin/env python3
"""Seat reservation with holdfast: hold E7-E9 all or nothing, extend while the
customer pays, confirm with an idempotency key, and handle a conflict.

    HOLDFAST_SOCKET=/run/holdfast/holdfast.sock python examples/seat_reservation.py

Each run books on a run (partition) of its own, so it works again and again on
the same daemon. Exits 1 when the first order was not booked.
"""

import argparse
import logging
import sys
import time
import uuid

from holdfast import Client, Confirmed, Conflict, HeldByAnother, HoldfastError, HoldLost, Seats

log = logging.getLogger("seat-reservation")


def pay(order_id: str) -> None:
    """Stand-in for the payment provider: takes a moment."""
    time.sleep(0.2)


def confirm_with_retry(hold, order_id: str, attempts: int = 3):
    # The idempotency key belongs to the order, not to the attempt: a retry
    # after a timeout either commits once or returns the stored result.
    key = f"{order_id}:confirm"
    for attempt in range(1, attempts + 1):
        try:
            return hold.confirm(key, reference=order_id, payload=b'{"channel":"web"}', timeout=5)
        except HoldfastError as exc:
            if not exc.retryable:
                raise
            log.warning("confirm attempt %d unsure (%s); retrying with the same key",
                        attempt, exc.code_name)
            time.sleep(0.2 * attempt)
    raise RuntimeError("confirm did not get through; the order stays unpaid-for")


def reserve(client: Client, run: str, seats, order_id: str) -> bool:
    try:
        # All or nothing: either every seat is ours or none is.
        with client.hold("seat", run, Seats(seats), ttl_ms=60_000,
                         correlation_id=order_id) as hold:
            log.info("held %s on %s (fence %d)", ", ".join(seats), run, hold.fence)

            # The customer is slow: give them more time before paying.
            hold.extend(120_000)
            pay(order_id)

            result = confirm_with_retry(hold, order_id)
            log.info("confirmed %d seats%s", len(result.claims), " (replayed)" if result.replayed else "")
            return True
        # Leaving the `with` without confirming (an exception, a cancelled
        # payment) releases the seats at once instead of waiting for the TTL.
    except HeldByAnother as exc:
        log.info("seat %s is being booked by someone else; pick other seats", exc.resource_id)
    except Confirmed as exc:
        log.info("seat %s is already sold", exc.resource_id)
    except (Conflict, HoldLost) as exc:
        # The hold expired while paying and someone else got the seat: refund.
        log.warning("lost the seats before confirming (%s): refund order %s", exc.code_name, order_id)
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", help="daemon socket (default: $HOLDFAST_SOCKET, else "
                                     "/run/holdfast/holdfast.sock)")
    ap.add_argument("--run", default=f"run-2026-12-01-KTX101-{uuid.uuid4().hex[:6]}")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    with Client(args.socket) as client:
        seats = ["E7", "E8", "E9"]
        ok = reserve(client, args.run, seats, order_id=f"order-{uuid.uuid4().hex[:8]}")
        # A second customer asks for an overlapping block: conflict handled.
        second = reserve(client, args.run, ["E9", "E10"], order_id=f"order-{uuid.uuid4().hex[:8]}")
        print(f"first order: {'booked' if ok else 'not booked'}; "
              f"second order: {'booked' if second else 'not booked'}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
