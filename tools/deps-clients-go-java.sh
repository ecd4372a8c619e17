#!/usr/bin/env bash
# Installs what the Go and Java clients need beyond the repo (idempotent).
# Go (>= 1.23), Java 17 and Maven are expected on the machine; Debian's
# protobuf-compiler provides protoc for clients/go/regen.sh. Maven and the Go
# module proxy supply the libraries on first use.
set -euo pipefail

need_apt=()
command -v protoc >/dev/null || need_apt+=(protobuf-compiler)
command -v java >/dev/null || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need_apt+=(maven)
if ((${#need_apt[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${need_apt[@]}" \
    || { apt-get update && apt-get install -y --no-install-recommends "${need_apt[@]}"; }
fi

if ! command -v go >/dev/null; then
  echo "deps-clients-go-java: Go >= 1.23 is required (clients/go/go.mod) and was not found" >&2
  exit 1
fi
jv="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
if [[ -z "$jv" || "$jv" -lt 17 ]]; then
  echo "deps-clients-go-java: Java 17+ is required, found: $(java -version 2>&1 | head -1)" >&2
  exit 1
fi
