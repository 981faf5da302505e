#!/usr/bin/env bash
# gen.sh regenerates the Go code beside habilis/v1/habilis.proto with protoc
# and the plugins pinned by the tool directives of go.mod (go tool builds
# them at exactly those versions). `go generate ./...` runs it; so does
# check-generated.sh, with an output directory of its own:
#
#	bash api/gen.sh [OUTDIR]
#
# OUTDIR defaults to the api directory itself.
set -euo pipefail

cd "$(dirname "$0")"
out=$(realpath "${1:-.}")

if ! command -v protoc >/dev/null; then
	echo "gen.sh: protoc not found; install it (Debian: apt-get install protobuf-compiler)" >&2
	exit 1
fi

go_plugin=$(go tool -n protoc-gen-go)
grpc_plugin=$(go tool -n protoc-gen-go-grpc)

mkdir -p "$out"
protoc -I . \
	--plugin=protoc-gen-go="$go_plugin" \
	--plugin=protoc-gen-go-grpc="$grpc_plugin" \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	habilis/v1/habilis.proto
