#!/usr/bin/env bash
# The README's "test" command: install what is missing, build twice (release
# and ASan+UBSan), and run every suite: unit tests, daemon integration tests
# under both builds, deploy tests, and each client's suite. Every suite runs
# even when an earlier one failed; the exit status is 0 only if all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/bin:$PATH" # Debian's python3 carries python3-protobuf and pytest

tools/deps.sh || exit 1
shopt -s nullglob
for deps in tools/deps-*.sh; do bash "$deps" || exit 1; done
tools/build.sh release || exit 1
tools/build.sh asan || exit 1

passed=0 failed=0 failed_names=()
suite() {
  local name="$1"; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("$name"); fi
}

suite "unit tests (release)" ctest --test-dir build --output-on-failure
suite "unit tests (asan+ubsan)" ctest --test-dir build-asan --output-on-failure
suite "daemon integration (release)" \
  env HOLDFASTD="$PWD/build/daemon/holdfastd" /usr/bin/python3 -m pytest -q tests --ignore=tests/deploy --ignore=tests/chaos
suite "daemon integration (asan+ubsan)" \
  env HOLDFASTD="$PWD/build-asan/daemon/holdfastd" /usr/bin/python3 -m pytest -q tests --ignore=tests/deploy --ignore=tests/chaos
suite "daemon integration (valgrind, leaks are errors)" \
  env HOLDFASTD="$PWD/build/daemon/holdfastd" \
  HOLDFASTD_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect" \
  /usr/bin/python3 -m pytest -q tests --ignore=tests/deploy --ignore=tests/chaos
# Redis 8.6 here; Valkey 9.1 too with tools/test-matrix.sh (the README names it).
suite "server matrix (Redis 8.6)" tools/test-matrix.sh redis
suite "chaos (fault injection, release build)" \
  env HOLDFASTD="$PWD/build/daemon/holdfastd" /usr/bin/python3 -m pytest -q tests/chaos
suite "fuzzing (frames, config; 20 s each)" tools/fuzz.sh 20
for t in tools/test-deploy.sh tools/test-clients-*.sh tools/test-new-user.sh; do
  [ -e "$t" ] && suite "$(basename "$t" .sh)" bash "$t"
done

echo
if [ "$failed" = 0 ]; then
  echo "test-all: every suite passed"
else
  printf 'test-all: failed suites:'; printf ' [%s]' "${failed_names[@]}"; echo
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
