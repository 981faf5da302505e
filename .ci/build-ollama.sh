#!/usr/bin/env bash
# build-ollama.sh builds the Ollama server from its Go module, for the tests
# that need a real one (internal/ollamatest), and prints the binary's path as
# the last line of stdout:
#
#	export HABILIS_OLLAMA_BIN=$(bash .ci/build-ollama.sh | tail -1)
#
# It needs Go, gcc/g++ and the Debian registry. Go module zips drop every
# vendor/ directory, so the three header-only libraries llama.cpp vendors come
# from elsewhere: nlohmann/json and stb from Debian packages, miniaudio from
# the Go module github.com/gen2brain/malgo. The binary is cached under the
# user's cache directory, keyed by version; a cached one that runs is reused.
# Progress goes to stderr.
set -euo pipefail

version=0.17.4
malgo=github.com/gen2brain/malgo@v0.11.24

cache=${XDG_CACHE_HOME:-$HOME/.cache}/habilis
bindir=$cache/ollama-$version
bin=$bindir/ollama
# include must not move between runs: the -I path is part of Go's build-cache
# key, and a new one costs a full rebuild of llama.cpp.
include=$cache/ollama-include

log() { echo "build-ollama: $*" >&2; }

if [[ -x $bin ]] && OLLAMA_HOST=127.0.0.1:1 "$bin" --version >/dev/null 2>&1; then
	log "cached: $bin"
	echo "$bin"
	exit 0
fi

sudo=
if [[ $(id -u) -ne 0 ]]; then
	sudo=sudo
fi
missing=()
for pkg in nlohmann-json3-dev libstb-dev; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$pkg")
	fi
done
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# Working outside any module keeps the downloads and the build independent
# of the caller's go.mod and go.work.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOWORK=off GO111MODULE=on

log "fetching miniaudio.h from $malgo"
malgodir=$(go mod download -json "$malgo" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z $malgodir || ! -f $malgodir/miniaudio.h ]]; then
	log "miniaudio.h not found in $malgo (dir ${malgodir:-unknown})"
	exit 1
fi
mkdir -p "$include/miniaudio"
if ! cmp -s "$malgodir/miniaudio.h" "$include/miniaudio/miniaudio.h"; then
	cp "$malgodir/miniaudio.h" "$include/miniaudio/miniaudio.h"
	chmod 0644 "$include/miniaudio/miniaudio.h"
fi

log "building ollama $version (about 3 minutes on 2 cores when cold)"
mkdir -p "$bindir"
GOBIN=$bindir CGO_ENABLED=1 CGO_CPPFLAGS="-I$include" \
	go install -ldflags "-s -w -X github.com/ollama/ollama/version.Version=$version" \
	"github.com/ollama/ollama@v$version" >&2

if ! OLLAMA_HOST=127.0.0.1:1 "$bin" --version >/dev/null 2>&1; then
	log "built $bin but it does not run --version"
	exit 1
fi
log "built: $bin"
echo "$bin"
