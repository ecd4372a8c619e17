#!/usr/bin/env bash
# Regenerates holdfastpb/ from protos/holdfast/v1/holdfast.proto.
# Uses protoc from PATH (Debian: protobuf-compiler) and protoc-gen-go at the
# exact google.golang.org/protobuf version pinned in go.mod, so the generated
# code always matches the runtime it is compiled against.
# Run from anywhere: clients/go/regen.sh   (or: cd clients/go && go generate ./...)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
protos="$(cd "$here/../../protos" && pwd)"
cd "$here"

command -v protoc >/dev/null || { echo "regen.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
version="$(go list -m -f '{{.Version}}' google.golang.org/protobuf)"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$version"

rm -f holdfastpb/*.pb.go
PATH="$bin:$PATH" protoc -I "$protos" \
  --go_out=. --go_opt=module=github.com/holdfast/holdfast/clients/go \
  holdfast/v1/holdfast.proto
echo "regen.sh: generated $(ls holdfastpb/*.pb.go) with protoc-gen-go $version, $(protoc --version)"
