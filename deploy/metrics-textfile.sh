#!/bin/sh
# holdfast-metrics-textfile - write holdfastd's Prometheus metrics where the
# node exporter's textfile collector reads them (*.prom in DIR).
#   usage: metrics-textfile [DIR]   (default /var/lib/prometheus/node-exporter)
# The socket is holdfastctl's default, or $HOLDFAST_SOCKET.
set -u
dir=${1:-/var/lib/prometheus/node-exporter}
tmp="$dir/holdfast.prom.tmp"

# Write beside the target, then rename: the collector never reads half a
# file, and it ignores the .tmp name.
if holdfastctl metrics > "$tmp"; then
    exec mv -f "$tmp" "$dir/holdfast.prom"
fi
# Stale numbers would hide an outage; a missing series is what absent()
# alerts look for.
rm -f "$tmp" "$dir/holdfast.prom"
echo "metrics-textfile: holdfastctl metrics failed; removed $dir/holdfast.prom" >&2
exit 1
