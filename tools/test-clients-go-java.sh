#!/usr/bin/env bash
# Runs the Go and Java client suites: golden wire frames, the client contract
# (protos/contract/), transport mechanics, and live tests against a real
# holdfastd; then runs each client's example twice against the same daemon
# (each example counts as one test: examples must work again and again).
# The live tests and examples use one private stack made for tests, started
# here with tools/devstack.sh (building the daemon first if it is not built)
# and handed to the suites as HOLDFAST_TEST_STACK; HOLDFAST_TEST_STACK=DIR set
# by the caller (a `tools/devstack.sh up DIR` stack) is used instead.
# HOLDFAST_SOCKET is never used: it names a real daemon.
# Exits non-zero if any suite fails; prints each runner's summary lines and a
# total.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="$(mktemp -d)"
stack="" # the test stack this script started, if any
cleanup() {
  if [[ -n "$stack" ]]; then
    bash "$root/tools/devstack.sh" down "$stack" >/dev/null 2>&1
    rm -rf "$stack"
  fi
  rm -rf "$logs"
}
trap cleanup EXIT
unset HOLDFAST_SOCKET # a real daemon's socket: nothing here may use it

bash "$root/tools/deps-clients-go-java.sh" || exit 1

# One stack made for tests, for the live tests and the examples.
if [[ -z "${HOLDFAST_TEST_STACK:-}" ]]; then
  if [[ ! -x "${HOLDFASTD:-$root/build/daemon/holdfastd}" ]] || ! command -v redis-server >/dev/null; then
    echo "== building holdfastd for the live tests"
    bash "$root/tools/deps.sh" && bash "$root/tools/build.sh" release >"$logs/build.log" 2>&1 \
      || { tail -40 "$logs/build.log"; echo "test-clients-go-java: daemon build failed" >&2; exit 1; }
  fi
  stack="$(mktemp -d /tmp/hf-gojava-XXXXXX)" # short: socket paths max 107 bytes
  if ! bash "$root/tools/devstack.sh" up "$stack" >"$logs/stack.log" 2>&1; then
    cat "$logs/stack.log" "$stack/holdfastd.log" 2>/dev/null | tail -40
    echo "test-clients-go-java: tools/devstack.sh up failed" >&2
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

# --- Go -------------------------------------------------------------------
echo "== clients/go"
(
  set -e
  cd "$root/clients/go"
  # Generated code must match the .proto: regenerate into a scratch copy.
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/clients" "$scratch/protos"
  cp -r . "$scratch/clients/go" && cp -r "$root/protos/." "$scratch/protos/"
  (cd "$scratch/clients/go" && ./regen.sh >/dev/null)
  if ! diff -r holdfastpb "$scratch/clients/go/holdfastpb"; then
    echo "clients/go/holdfastpb is stale: run clients/go/regen.sh" >&2
    exit 1
  fi
  go vet ./...
  race=()
  command -v gcc >/dev/null && race=(-race)
  go test "${race[@]}" -count=1 -timeout 5m -v ./...
  # otelhf, the opt-in OpenTelemetry hook, is a module of its own.
  (cd otelhf && go vet ./... && go test "${race[@]}" -count=1 -timeout 5m -v ./...)
) >"$logs/go.log" 2>&1
go_rc=$?
# Summary: skips with their reason, failures, the per-package result lines
# and a count.
awk '/^[[:space:]]*--- SKIP/ { sub(/^[[:space:]]+/, "", prev); print "  " $3 " skipped: " prev } { prev = $0 }' \
  "$logs/go.log" | head -40
grep -E '^[[:space:]]*--- FAIL|^(FAIL|ok |\?)' "$logs/go.log"
read -r p f s <<<"$(awk '/^[[:space:]]*--- PASS/ { p++ } /^[[:space:]]*--- FAIL/ { f++ } /^[[:space:]]*--- SKIP/ { s++ }
     END { printf "%d %d %d\n", p, f, s }' "$logs/go.log")"
echo "go: $p passed, $f failed, $s skipped"
count "$p" "$f" "$s"
if ((go_rc != 0 && f == 0)); then count 0 1 0; fi # vet, stale code or a build error: no test line
if ((go_rc != 0)); then
  echo "-- go log (tail):"; tail -60 "$logs/go.log"
  failed+=(go)
fi

# --- Java -----------------------------------------------------------------
echo "== clients/java"
(cd "$root/clients/java" && mvn -B -ntp test) >"$logs/java.log" 2>&1
java_rc=$?
grep -E 'Tests run:|BUILD (SUCCESS|FAILURE)|<<< FAIL|Tests in error|Failed tests' "$logs/java.log"
# Surefire's totals: each execution (the pom has several) ends with a
# "Tests run:" line without a class name; they are summed.
read -r p f s <<<"$(grep -E 'Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$logs/java.log" |
  sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+), Skipped: ([0-9]+)$/\1 \2 \3 \4/' |
  awk '{ p += $1 - $2 - $3 - $4; f += $2 + $3; s += $4 } END { printf "%d %d %d\n", p, f, s }')"
count "$p" "$f" "$s"
if ((java_rc != 0 && f == 0)); then count 0 1 0; fi # a build error: no test line
if ((java_rc != 0)); then
  echo "-- maven log (tail):"; tail -80 "$logs/java.log"
  failed+=(java)
fi

# --- Examples -------------------------------------------------------------
# Each example runs twice against the test stack: it must work again and again
# on the same daemon, and exits 0 only when its seats were sold.
sock="$HOLDFAST_TEST_STACK/holdfast.sock"
example() { # example NAME DIR COMMAND...
  local name="$1" dir="$2"; shift 2
  local ok=1
  for run in 1 2; do
    if ! (cd "$dir" && HOLDFAST_SOCKET="$sock" timeout 300 "$@") >"$logs/example-$name-$run.log" 2>&1; then
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
example go "$root/clients/go" go run ./examples/seatreservation
# Compiled with the tests above (examples/src is a test source root).
example java "$root/clients/java" mvn -B -ntp -q exec:java -Dexec.classpathScope=test \
  -Dexec.mainClass=dev.holdfast.examples.SeatReservationMain

echo
if ((${#failed[@]})); then
  echo "client suites FAILED: ${failed[*]}"
else
  echo "client suites passed: go java (and their examples)"
fi
echo "clients-go-java: $total_pass passed, $total_fail failed, $total_skip skipped"
((${#failed[@]} == 0))
