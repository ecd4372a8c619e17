#!/usr/bin/env bash
# Runs the Go and Java client suites: golden wire frames, transport mechanics,
# and live tests against a real holdfastd. The live tests use HOLDFAST_SOCKET
# when set, otherwise each suite starts its own stack with tools/devstack.sh
# (and skips them while that script does not exist).
# Exits non-zero if any suite fails; prints each runner's summary lines.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

bash "$root/tools/deps-clients-go-java.sh" || exit 1

failed=()

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
) >"$logs/go.log" 2>&1
go_rc=$?
# Summary: skips with their reason, failures, the per-package result lines
# and a count.
awk '/^[[:space:]]*--- SKIP/ { sub(/^[[:space:]]+/, "", prev); print "  " $3 " skipped: " prev } { prev = $0 }' \
  "$logs/go.log" | head -40
grep -E '^[[:space:]]*--- FAIL|^(FAIL|ok |\?)' "$logs/go.log"
awk '/^[[:space:]]*--- PASS/ { p++ } /^[[:space:]]*--- FAIL/ { f++ } /^[[:space:]]*--- SKIP/ { s++ }
     END { printf "go: %d passed, %d failed, %d skipped\n", p, f, s }' "$logs/go.log"
if ((go_rc != 0)); then
  echo "-- go log (tail):"; tail -60 "$logs/go.log"
  failed+=(go)
fi

# --- Java -----------------------------------------------------------------
echo "== clients/java"
(cd "$root/clients/java" && mvn -B -ntp test) >"$logs/java.log" 2>&1
java_rc=$?
grep -E 'Tests run:|BUILD (SUCCESS|FAILURE)|<<< FAIL|Tests in error|Failed tests' "$logs/java.log"
if ((java_rc != 0)); then
  echo "-- maven log (tail):"; tail -80 "$logs/java.log"
  failed+=(java)
fi

if ((${#failed[@]})); then
  echo "client suites FAILED: ${failed[*]}"
  exit 1
fi
echo "client suites passed: go java"
