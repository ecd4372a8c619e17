#!/usr/bin/env bash
# Install the Debian packages the daemon, its tests and the dev stack need,
# then build hiredis 1.2 with TLS into a private prefix (tools/deps-hiredis.sh;
# Debian 12 packages only 0.14). Idempotent: installs only what is missing.
# Run as root (or with sudo).
set -euo pipefail

packages=(
  build-essential dpkg-dev cmake pkg-config
  libuv1-dev libssl-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  liblua5.4-dev libpq-dev libsystemd-dev libsodium-dev libcmocka-dev libmicrohttpd-dev uthash-dev
  redis-server postgresql
  python3 python3-pytest python3-protobuf python3-prometheus-client valgrind clang libclang-rt-14-dev
  openssl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's postgresql package starts a cluster on install; we never use it.

# hiredis 1.2 with TLS, under build/deps; needs no root, so under sudo it is
# built as the invoking user, who owns the tree.
if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
  sudo -u "$SUDO_USER" "$(dirname "$0")/deps-hiredis.sh"
else
  "$(dirname "$0")/deps-hiredis.sh"
fi
