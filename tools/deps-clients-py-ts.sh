#!/usr/bin/env bash
# Installs what the Python and TypeScript clients need beyond the repo
# (idempotent). Node.js >= 20 with npm is expected on the machine (Debian
# bookworm's own nodejs is 18, too old); PyPI and the npm registry supply the
# libraries on first use. Debian packages: python3-venv (a venv for the
# Python suite) and protobuf-compiler (protoc 3.21, clients/python/regen.sh
# and protos/testdata/generate.py, with python3-protobuf).
set -euo pipefail

need_apt=()
for p in python3 python3-venv python3-protobuf protobuf-compiler; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
if ((${#need_apt[@]})); then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" \
    || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"; }
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "deps-clients-py-ts: Node.js >= 20 with npm is required (clients/typescript) and was not found" >&2
  exit 1
fi
nv="$(node -p 'process.versions.node.split(".")[0]')"
if [[ "$nv" -lt 20 ]]; then
  echo "deps-clients-py-ts: Node.js >= 20 is required, found $(node --version)" >&2
  exit 1
fi
