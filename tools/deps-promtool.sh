#!/usr/bin/env bash
# promtool, to check the metrics exposition (tests/test_observability.py).
# Debian packages it only inside `prometheus`, the whole server with a
# service; so the package is downloaded the apt way (signed index, hashed
# file) and only usr/bin/promtool is taken out of it, into build/deps/promtool.
# Nothing is installed. Cached: a second run does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/build/deps/promtool"
[ -x "$out/usr/bin/promtool" ] && exit 0
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1); then
  apt-get update -qq >/dev/null 2>&1 || true
  (cd "$tmp" && apt-get download -qq prometheus >/dev/null)
fi
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
mkdir -p "$out/usr/bin"
cp "$tmp/x/usr/bin/promtool" "$out/usr/bin/promtool"
"$out/usr/bin/promtool" --version >/dev/null
