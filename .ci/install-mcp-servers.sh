#!/usr/bin/env bash
# .ci/install-mcp-servers.sh installs the reference MCP servers that the
# gateway's end-to-end tests start as upstreams, at the versions pinned in
# .ci/mcp-servers/package-lock.json, into a cache directory named after the
# lock file's hash, and prints that directory (HABILIS_MCP_SERVERS for the
# tests). Without npm it prints nothing, and those tests skip.
set -euo pipefail
src="$(cd "$(dirname "$0")/mcp-servers" && pwd)"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "node or npm not found: the MCP gateway's tests with the reference servers will skip" >&2
	exit 0
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/habilis
hash=$(sha256sum "$src/package-lock.json" | cut -c1-16)
dir=$cache/mcp-servers/$hash
if [[ ! -x $dir/node_modules/.bin/mcp-server-memory ]]; then
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	cp "$src/package.json" "$src/package-lock.json" "$dir.tmp/"
	# No install scripts: the servers are plain JavaScript.
	(cd "$dir.tmp" && npm ci --ignore-scripts --no-audit --no-fund --cache "$cache/npm") >&2
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
fi
echo "$dir"
