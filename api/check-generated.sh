#!/usr/bin/env bash
# check-generated.sh fails when the committed Go code of habilis.proto is
# not what gen.sh generates from it: someone edited the .proto without
# running `go generate ./...`, or edited the generated code by hand.
#
#	bash api/check-generated.sh
#
# It installs protoc from Debian when it is missing. The generated files
# record the protoc version in their headers; those lines are left out of
# the comparison, so a different protoc release does not fail the check
# (the plugins, which write the code, are pinned in go.mod).
set -euo pipefail

cd "$(dirname "$0")"

if ! command -v protoc >/dev/null; then
	sudo=
	if [[ $(id -u) -ne 0 ]]; then
		sudo=sudo
	fi
	echo "check-generated: installing protoc" >&2
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends protobuf-compiler >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash gen.sh "$tmp/gen"

# strip drops the protoc version lines of a generated file's header.
strip() { grep -Ev '^//[[:space:]]+(- )?protoc[[:space:]]+(v|\(unknown\))' "$1" || true; }

status=0
for f in $(cd "$tmp/gen" && find . -name '*.pb.go' | sort); do
	if [[ ! -f $f ]]; then
		echo "check-generated: api/${f#./} is missing; run go generate ./..." >&2
		status=1
		continue
	fi
	if ! diff -u <(strip "$f") <(strip "$tmp/gen/$f") >&2; then
		echo "check-generated: api/${f#./} is out of date; run go generate ./..." >&2
		status=1
	fi
done
for f in $(find habilis -name '*.pb.go' | sort); do
	if [[ ! -f $tmp/gen/$f ]]; then
		echo "check-generated: api/$f is no longer generated; delete it" >&2
		status=1
	fi
done
if ((status == 0)); then
	echo "check-generated: api generated code is up to date" >&2
fi
exit $status
