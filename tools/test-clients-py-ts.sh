#!/usr/bin/env bash
# Runs the Python and TypeScript client suites: golden wire frames, the client
# contract (protos/contract/), transport mechanics, and live tests against a
# real holdfastd (+ Redis, + PostgreSQL when the daemon supports it); then runs
# each client's example twice against the same daemon (each run counts as one
# test: examples must work again and again).
# The live tests and examples use one private stack made for tests, started
# here with tools/devstack.sh (building the daemon first if it is not built)
# and handed to the suites as HOLDFAST_TEST_STACK; HOLDFAST_TEST_STACK=DIR set
# by the caller (a `tools/devstack.sh up DIR` stack) is used instead.
# HOLDFAST_SOCKET is never used: it names a real daemon.
# Also checks that the checked-in generated code matches protos/.
# Installs into build/clients-py-ts/ and clients/typescript/node_modules only.
# Exits non-zero if anything fails; prints each runner's summary lines.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$root/build/clients-py-ts"
logs="$(mktemp -d)"
scratch="$(mktemp -d)"
stack="" # the test stack this script started, if any
cleanup() {
  if [[ -n "$stack" ]]; then
    bash "$root/tools/devstack.sh" down "$stack" >/dev/null 2>&1
    rm -rf "$stack"
  fi
  rm -rf "$logs" "$scratch"
}
trap cleanup EXIT
export PYTHONDONTWRITEBYTECODE=1
unset HOLDFAST_SOCKET # a real daemon's socket: nothing here may use it

bash "$root/tools/deps-clients-py-ts.sh" || exit 1

# One stack made for tests, for the live tests and the examples.
if [[ -z "${HOLDFAST_TEST_STACK:-}" ]]; then
  if [[ ! -x "${HOLDFASTD:-$root/build/daemon/holdfastd}" ]] || ! command -v redis-server >/dev/null; then
    echo "== building holdfastd for the live tests"
    bash "$root/tools/deps.sh" && bash "$root/tools/build.sh" release >"$logs/build.log" 2>&1 \
      || { tail -40 "$logs/build.log"; echo "test-clients-py-ts: daemon build failed" >&2; exit 1; }
  fi
  stack="$(mktemp -d /tmp/hf-pyts-XXXXXX)" # short: socket paths max 107 bytes
  if ! bash "$root/tools/devstack.sh" up "$stack" >"$logs/stack.log" 2>&1; then
    cat "$logs/stack.log" "$stack/holdfastd.log" 2>/dev/null | tail -40
    echo "test-clients-py-ts: tools/devstack.sh up failed" >&2
    exit 1
  fi
  export HOLDFAST_TEST_STACK="$stack"
fi
echo "test stack: $HOLDFAST_TEST_STACK"

failed=()
total_pass=0 total_fail=0 total_skip=0
count() { # count PASS FAIL SKIP
  total_pass=$((total_pass + ${1:-0})); total_fail=$((total_fail + ${2:-0})); total_skip=$((total_skip + ${3:-0}))
}
pytest_counts() { # "PASS FAIL SKIP" from pytest's last summary line (errors count as failures)
  grep -E '[0-9]+ (passed|failed|skipped|errors?)' "$1" | tail -1 | awk '{
    for (i = 2; i <= NF; i++) { n = $(i - 1) + 0; w = $i; gsub(/[^a-z]/, "", w)
      if (w == "passed") p += n; else if (w == "failed" || w == "error" || w == "errors") f += n; else if (w == "skipped") s += n }
  } END { printf "%d %d %d\n", p, f, s }'
}

# --- Python -----------------------------------------------------------------
echo "== clients/python"
py="${PYTHON:-python3}"
(
  set -e
  # Generated code must match the .proto: regenerate into a scratch copy.
  mkdir -p "$scratch/regen/clients"
  cp -r "$root/protos" "$scratch/regen/protos"
  cp -r "$root/clients/python" "$scratch/regen/clients/python"
  "$scratch/regen/clients/python/regen.sh" >/dev/null
  if ! diff -r "$root/clients/python/src/holdfast/_gen" "$scratch/regen/clients/python/src/holdfast/_gen"; then
    echo "clients/python/src/holdfast/_gen is stale: run clients/python/regen.sh" >&2
    exit 1
  fi
  # Install from a copy, so the package build leaves nothing in the tree.
  pkg="$scratch/pkg/python"
  mkdir -p "$scratch/pkg"
  cp -r "$root/clients/python" "$pkg"
  rm -rf "$pkg/build" "$pkg"/src/*.egg-info
  [[ -x "$work/venv/bin/python" ]] || "$py" -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade "$pkg[test]"
  echo "protobuf runtime: $("$work/venv/bin/python" -c 'import google.protobuf as p; print(p.__version__)')"
  cd "$root/clients/python"
  "$work/venv/bin/python" -m pytest -p no:cacheprovider -rs tests
) >"$logs/py.log" 2>&1
py_rc=$?
grep -E '^protobuf runtime|^SKIPPED|^FAILED|^ERROR|passed|failed|stale' "$logs/py.log" | tail -30
read -r p f s <<<"$(pytest_counts "$logs/py.log")"
count "$p" "$f" "$s"
if ((py_rc != 0)); then
  echo "-- python log (tail):"; tail -80 "$logs/py.log"
  failed+=(python)
fi

# The oldest protobuf runtime pyproject.toml allows must work too (offline tests).
echo "== clients/python on protobuf 4.21 (the declared floor)"
(
  set -e
  [[ -x "$work/venv-floor/bin/python" ]] || "$py" -m venv "$work/venv-floor"
  "$work/venv-floor/bin/python" -m pip install -q --disable-pip-version-check \
    "protobuf==4.21.12" "$scratch/pkg/python[test]"
  cd "$root/clients/python"
  "$work/venv-floor/bin/python" -m pytest -p no:cacheprovider -q -m "not live" tests
) >"$logs/py-floor.log" 2>&1
floor_rc=$?
grep -E '^FAILED|^ERROR|passed|failed' "$logs/py-floor.log" | tail -10
read -r p f s <<<"$(pytest_counts "$logs/py-floor.log")"
count "$p" "$f" "$s"
if ((floor_rc != 0)); then
  echo "-- python (protobuf 4.21) log (tail):"; tail -60 "$logs/py-floor.log"
  failed+=(python-protobuf-4.21)
fi

# --- TypeScript ---------------------------------------------------------------
echo "== clients/typescript"
(
  set -e
  cd "$root/clients/typescript"
  npm ci --no-audit --no-fund --loglevel=error
  # Generated code must match the .proto.
  npx buf generate --template buf.gen.yaml -o "$scratch/ts"
  if ! diff -r src/gen "$scratch/ts/src/gen"; then
    echo "clients/typescript/src/gen is stale: run npm run generate" >&2
    exit 1
  fi
  npm test
) >"$logs/ts.log" 2>&1
ts_rc=$?
grep -E '^\s*not ok|# SKIP|^# (tests|pass|fail|skipped|cancelled) |stale' "$logs/ts.log" | tail -30
p="$(sed -n 's/^# pass \([0-9]*\)/\1/p' "$logs/ts.log" | tail -1)"
f="$(sed -n 's/^# fail \([0-9]*\)/\1/p' "$logs/ts.log" | tail -1)"
c="$(sed -n 's/^# cancelled \([0-9]*\)/\1/p' "$logs/ts.log" | tail -1)"
f=$(( ${f:-0} + ${c:-0} )) # cancelled: a before() hook failed, e.g. no stack
s="$(sed -n 's/^# skipped \([0-9]*\)/\1/p' "$logs/ts.log" | tail -1)"
count "$p" "$f" "$s"
if ((ts_rc != 0)); then
  echo "-- typescript log (tail):"; tail -80 "$logs/ts.log"
  failed+=(typescript)
fi

# --- Examples ----------------------------------------------------------------
# Each example runs twice against the test stack: it must work again and again
# on the same daemon. One test per example.
sock="$HOLDFAST_TEST_STACK/holdfast.sock"
example() { # example NAME DIR COMMAND...: two runs, exit 0 and the booking line
  local name="$1" dir="$2"; shift 2
  local ok=1
  for run in 1 2; do
    if ! (cd "$dir" && HOLDFAST_SOCKET="$sock" timeout 120 "$@") >"$logs/example-$name-$run.log" 2>&1 ||
      ! grep -q "first order: booked; second order: not booked" "$logs/example-$name-$run.log"; then
      ok=0
      echo "-- example $name, run $run (tail):"; tail -20 "$logs/example-$name-$run.log"
    fi
  done
  if ((ok)); then
    echo "example $name: passed (2 runs)"; count 1 0 0
  else
    echo "example $name: FAILED"; count 0 1 0; failed+=("example-$name")
  fi
}
echo "== examples"
example python "$root/clients/python" "$work/venv/bin/python" examples/seat_reservation.py
example typescript "$root/clients/typescript" node dist/examples/seat-reservation.js

echo
if ((${#failed[@]})); then
  echo "client suites FAILED: ${failed[*]}"
else
  echo "client suites passed: python typescript (and their examples)"
fi
echo "clients-py-ts: $total_pass passed, $total_fail failed, $total_skip skipped"
((${#failed[@]} == 0))
