#!/usr/bin/env bash
# The newer servers of the test matrix, built from Debian's source packages
# (Debian 12 ships Redis 7.0 only): Redis 8.6 from experimental (DELEX IFEQ)
# and Valkey 9.1 from sid (DELIFEQ). Fetched the apt way, with a private
# sources list and apt state (the system's apt configuration is left alone,
# apt checks the signed Release file and every file's hash), built with
# their own Makefiles, and kept in a cache: later runs on the same machine
# only check the binaries are there. Nothing is installed system-wide.
#
# Usage: tools/build-servers.sh [redis] [valkey]   (default: both)
#   -> prints the server binaries, one a line
#   HOLDFAST_SERVERS_DIR  the cache (default /var/cache/holdfast-servers when
#                         writable, else build/deps-servers in the tree)
#   HOLDFAST_DEBIAN_MIRROR  the Debian mirror (as for tools/deps-hiredis.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

mirror="${HOLDFAST_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
default_dir=/var/cache/holdfast-servers
if [ -z "${HOLDFAST_SERVERS_DIR:-}" ]; then
  if mkdir -p "$default_dir" 2>/dev/null && [ -w "$default_dir" ]; then
    HOLDFAST_SERVERS_DIR="$default_dir"
  else
    HOLDFAST_SERVERS_DIR="$PWD/build/deps-servers"
  fi
fi
dir="$HOLDFAST_SERVERS_DIR"
mkdir -p "$dir/src"
dir="$(cd "$dir" && pwd)"
exec 9>"$dir/.lock"
flock 9

# name suite version binary
servers=(
  "redis experimental 5:8.6.3-1 redis-server"
  "valkey sid 9.1.2-1 valkey-server"
)

fetch() { # name suite version
  local name="$1" suite="$2" version="$3" apt_dir
  apt_dir="$(mktemp -d "$dir/apt.XXXXXX")"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
    >"$apt_dir/sources.list"
  local opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/none"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=$(id -un)"
  )
  apt-get -qq "${opts[@]}" update
  (cd "$dir/src" && apt-get -qq "${opts[@]}" source --download-only "$name=$version")
  rm -rf "$apt_dir"
}

wanted=("$@")
for entry in "${servers[@]}"; do
  read -r name suite version binary <<<"$entry"
  if [ "${#wanted[@]}" -gt 0 ] && [[ " ${wanted[*]} " != *" $name "* ]]; then continue; fi
  upstream="${version#*:}"
  upstream="${upstream%-*}"
  out="$dir/$name-$upstream"
  if [ -x "$out/$binary" ] && "$out/$binary" --version >/dev/null 2>&1; then
    echo "$out/$binary"
    continue
  fi
  dsc="$dir/src/${name}_${version#*:}.dsc"
  if [ ! -f "$dsc" ]; then
    echo "build-servers: fetching $name $upstream from Debian $suite" >&2
    fetch "$name" "$suite" "$version" >&2
  fi
  echo "build-servers: building $name $upstream (a minute or two)" >&2
  work="$(mktemp -d "$dir/build.XXXXXX")"
  (cd "$work" && dpkg-source -x "$dsc" src >/dev/null)
  # libc malloc and no TLS/systemd: the bundled jemalloc and OpenSSL bindings
  # only cost build time here; the servers are test fixtures.
  if ! make -C "$work/src" -j"$(nproc)" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no "$binary" \
      >"$work/build.log" 2>&1; then
    tail -30 "$work/build.log" >&2
    echo "build-servers: building $name failed" >&2
    exit 1
  fi
  mkdir -p "$out"
  cp "$work/src/src/$binary" "$out/$binary.tmp"
  mv "$out/$binary.tmp" "$out/$binary"
  rm -rf "$work"
  echo "$out/$binary"
done
