#!/usr/bin/env bash
# hiredis 1.2 with TLS, linked statically into holdfastd (Debian 12 ships only
# hiredis 0.14, without TLS). The source is Debian trixie's hiredis source
# package, fetched the apt way: a private sources list and apt state (the
# system's apt configuration and lists are left alone), so apt checks the
# signed Release file and every file's hash. It is built with its own Makefile
# (USE_SSL=1, Debian's hardening flags) into a private prefix; nothing is ever
# installed over the system's library.
#
#   $HOLDFAST_DEPS_DIR/src/           the .dsc and its tarballs (kept: later runs
#                                     build from them without fetching)
#   $HOLDFAST_DEPS_DIR/hiredis-1.2/   include/hiredis/*.h, lib/libhiredis.a,
#                                     lib/libhiredis_ssl.a (what CMake links)
#
# HOLDFAST_DEPS_DIR defaults to build/deps in the source tree;
# HOLDFAST_DEBIAN_MIRROR overrides the Debian mirror (as for tools/test-deploy.sh). Does nothing
# when the prefix is already built from the cached source (a second or so
# otherwise). Needs apt-get, dpkg-source and dpkg-buildflags (dpkg-dev), make,
# a C compiler and libssl-dev: tools/deps.sh installs them. No root needed.
set -euo pipefail
cd "$(dirname "$0")/.."

suite=trixie   # the Debian suite whose source package is used
upstream=1.2   # the upstream series holdfastd is written against
mirror="${HOLDFAST_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
deps="${HOLDFAST_DEPS_DIR:-$PWD/build/deps}"
prefix="$deps/hiredis-$upstream"
src="$deps/src"
mkdir -p "$deps" "$src"
deps="$(cd "$deps" && pwd)"
prefix="$deps/hiredis-$upstream"
src="$deps/src"

# One run at a time (tools/build.sh release and asan may start together).
exec 9>"$deps/.hiredis.lock"
flock 9

dsc_in_cache() {
  local f
  for f in "$src"/hiredis_"$upstream".*.dsc; do
    [ -e "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

if ! dsc="$(dsc_in_cache)"; then
  echo "deps-hiredis: fetching hiredis $upstream source from Debian $suite"
  apt_dir="$deps/apt"
  rm -rf "$apt_dir"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "$mirror $suite main" >"$apt_dir/sources.list"
  # The system's proxies and keyrings still apply; its sources and state not.
  apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/none"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=$(id -un)"
  )
  apt-get -qq "${apt_opts[@]}" update
  # apt picks the suite's current revision; it must be of the series we use.
  version="$(apt-cache "${apt_opts[@]}" showsrc hiredis | sed -n 's/^Version: //p' | head -1)"
  case "$version" in
    "$upstream".*) ;;
    *) echo "deps-hiredis: $suite has hiredis '$version', not $upstream.x" >&2; exit 1 ;;
  esac
  tmp="$(mktemp -d "$deps/fetch.XXXXXX")"
  (cd "$tmp" && apt-get -qq "${apt_opts[@]}" source --download-only "hiredis=$version")
  mv "$tmp"/* "$src"/
  rmdir "$tmp"
  rm -rf "$apt_dir" # the suite's Sources index: ~10 MB, not needed again
  dsc="$(dsc_in_cache)"
fi

cflags="$(dpkg-buildflags --get CFLAGS)"
cppflags="$(dpkg-buildflags --get CPPFLAGS)"
stamp="$(basename "$dsc") USE_SSL=1 CFLAGS=$cflags CPPFLAGS=$cppflags"
if [ -f "$prefix/.stamp" ] && [ "$(cat "$prefix/.stamp")" = "$stamp" ] &&
   [ -f "$prefix/lib/libhiredis.a" ] && [ -f "$prefix/lib/libhiredis_ssl.a" ]; then
  exit 0
fi

echo "deps-hiredis: building $(basename "$dsc" .dsc) (USE_SSL=1) into $prefix"
work="$(mktemp -d "$deps/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log="$deps/hiredis-build.log"
{
  # Unpacks and applies Debian's patches; the hashes were checked by apt.
  dpkg-source --no-copy -x "$dsc" "$work/src"
  # Debian's Makefile patch: PREFIX defaults to $(DESTDIR)/usr; give both.
  make -C "$work/src" -j"$(nproc)" USE_SSL=1 CFLAGS="$cflags" CPPFLAGS="$cppflags" \
    DESTDIR= PREFIX="$work/stage" LIBRARY_PATH=lib install
} >"$log" 2>&1 || { tail -30 "$log" >&2; echo "deps-hiredis: build failed, see $log" >&2; exit 1; }

# Headers and the static libraries only: with no .so in the prefix, nothing
# can link against it dynamically by mistake.
rm -rf "$prefix"
mkdir -p "$prefix/lib"
cp -R "$work/stage/include" "$prefix/"
cp "$work/stage/lib/libhiredis.a" "$work/stage/lib/libhiredis_ssl.a" "$prefix/lib/"
grep -q '^#define HIREDIS_MAJOR 1$' "$prefix/include/hiredis/hiredis.h" ||
  { echo "deps-hiredis: $prefix is not hiredis 1.x" >&2; exit 1; }
echo "$stamp" >"$prefix/.stamp"
echo "deps-hiredis: hiredis $(basename "$dsc" .dsc | sed 's/^hiredis_//') ready in $prefix"
