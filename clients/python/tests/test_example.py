"""The seat-reservation example runs end to end against the live daemon."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.live

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "seat_reservation.py"


def test_seat_reservation_example(stack):
    env = dict(os.environ, HOLDFAST_SOCKET=stack.socket)
    # -W error: the example uses the surface of surface.json, no deprecated name.
    p = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", str(EXAMPLE)],
                       env=env, capture_output=True, text=True, timeout=60)
    if "Unimplemented" in p.stderr or "FailedPrecondition" in p.stderr:
        pytest.skip("daemon does not confirm yet (confirm issue not landed)")
    assert p.returncode == 0, p.stderr
    assert "first order: booked; second order: not booked" in p.stdout
    assert "already sold" in p.stderr or "someone else" in p.stderr
