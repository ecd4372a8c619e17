#!/usr/bin/env bash
# The README's "run" command: install what is missing, build, start a private
# Redis (and PostgreSQL) under ./.devstack and run holdfastd in the
# foreground. Ctrl-C stops the daemon and the stack. Works from any checkout,
# as root or not (a checkout under /root too): PostgreSQL's data and socket
# are in a directory under /tmp that .devstack/pg links to (tools/devstack.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh release
trap 'tools/devstack.sh down .devstack' EXIT
echo "Try, from another terminal:"
echo "  build/daemon/holdfastctl --socket $PWD/.devstack/holdfast.sock hold seat run-1 E7 E8"
tools/devstack.sh up .devstack --foreground
