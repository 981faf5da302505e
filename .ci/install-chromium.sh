#!/usr/bin/env bash
# install-chromium.sh installs Debian's Chromium, for the test that opens the
# HTML map in a real headless browser (toolmap/render), and prints its path as
# the last line of stdout:
#
#	export HABILIS_CHROMIUM=$(bash .ci/install-chromium.sh | tail -1)
#
# A Chromium already installed is used as it is. Otherwise the pinned version
# is installed when the archive still carries it; Debian's security archive
# keeps only its latest build of Chromium, so once a newer one replaces the
# pin, apt's candidate is installed instead and the script says so. The
# downloaded packages are kept under the user's cache directory, so that a
# reinstall downloads nothing. Progress goes to stderr.
set -euo pipefail

version=156.0.8078.79-1~deb12u1

log() { echo "install-chromium: $*" >&2; }

for name in chromium chromium-browser; do
	if bin=$(command -v "$name"); then
		log "installed: $bin ($("$bin" --version 2>/dev/null || echo "version unknown"))"
		echo "$bin"
		exit 0
	fi
done

sudo=
if [[ $(id -u) -ne 0 ]]; then
	sudo=sudo
fi
archives=${XDG_CACHE_HOME:-$HOME/.cache}/habilis/apt-archives
mkdir -p "$archives/partial"
apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends -o "Dir::Cache::archives=$archives")

$sudo apt-get update -qq >&2
if "${apt[@]}" install "chromium=$version" >&2; then
	log "installed chromium $version"
else
	log "chromium $version is no longer in the archive; installing $(apt-cache policy chromium | sed -n 's/^ *Candidate: //p')"
	"${apt[@]}" install chromium >&2
fi
command -v chromium
