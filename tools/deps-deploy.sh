#!/usr/bin/env bash
# Packages the deploy tests (tools/test-deploy.sh) need on a fresh Debian 12
# machine, on top of the daemon's build dependencies:
#   systemd          systemd-analyze (verify, security), systemd-socket-activate
#   man-db           systemd-analyze verify checks Documentation=man:... pages
#   cmake dpkg-dev   CPack's DEB generator and dpkg-shlibdeps
#   lintian          package checks
#   debootstrap      the clean Debian root the .deb is installed into
#   redis-server     the real Redis the socket-activated daemon talks to
#   python3-pytest python3-yaml   the tests themselves
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends \
    systemd man-db cmake dpkg-dev lintian debootstrap redis-server \
    python3 python3-pytest python3-yaml gzip
