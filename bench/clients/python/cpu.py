"""Runs a yardstick script and adds the CPU it used (user + system, this
process only, imports excluded) per pair to its result line:
    cpu.py SCRIPT ARGS...
The yardsticks print one line of key=value fields with pairs=N."""
import io
import os
import runpy
import sys
from contextlib import redirect_stdout

for mod in ("holdfast", "redis"):  # imported before the clock starts
    try:
        __import__(mod)
    except ImportError:
        pass
script = sys.argv[1]
sys.argv = sys.argv[1:]
out = io.StringIO()
t0 = os.times()
with redirect_stdout(out):
    runpy.run_path(script, run_name="__main__")
t1 = os.times()
line = out.getvalue().strip()
pairs = int(dict(kv.split("=", 1) for kv in line.split() if "=" in kv).get("pairs", 0))
cpu = (t1.user - t0.user) + (t1.system - t0.system)
print(f"{line} cpu_us_per_pair={cpu / pairs * 1e6 if pairs else 0:.1f}")
