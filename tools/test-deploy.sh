#!/usr/bin/env bash
# Deploy tests: builds holdfastd/holdfastctl and the .deb, then runs
# tests/deploy (systemd units, socket activation + sd_notify, the package in
# a clean debootstrap root, the Kubernetes example, the dashboard and alert
# rules of deploy/monitoring with promtool). About a minute on top of
# the build; the debootstrap step fetches from Debian's mirror
# (HOLDFAST_DEBIAN_MIRROR overrides it).
#
#   tools/test-deploy.sh                 # build dir: $HOLDFAST_BUILD_DIR or build
#   tools/test-deploy.sh -k socket       # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

build=${HOLDFAST_BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j"$(nproc)"
# Always repackage, so the tests never look at a stale .deb.
rm -f "$build"/holdfast_*.deb
cmake --build "$build" --target package

# promtool (check/test rules in tests/deploy/test_monitoring.py), taken out
# of Debian's prometheus package into build/deps/promtool; cached.
bash tools/deps-promtool.sh

export HOLDFAST_BUILD_DIR
HOLDFAST_BUILD_DIR=$(cd "$build" && pwd)
export PYTHONDONTWRITEBYTECODE=1
# Debian's pytest (python3-pytest), not whatever python3 is first on PATH.
exec /usr/bin/python3 -m pytest -p no:cacheprovider -ra tests/deploy "$@"
