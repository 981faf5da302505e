#!/usr/bin/env bash
# loadtest.sh measures `habilis serve` under load with ghz, a gRPC load
# generator. It is not run by CI: figures depend on the machine. For each
# catalog size it
#
#   1. writes a synthetic catalog of N tools (5 examples each) and 1,000
#      queries paraphrasing them (api/internal/synth);
#   2. serves it on loopback (plaintext, lexical embedder, store in a temp dir);
#   3. checks the server with grpcurl: `list` shows habilis.v1.ToolRouter, a
#      Select call answers;
#   4. runs ghz against grpc.health.v1.Health/Check and then
#      habilis.v1.ToolRouter/Select on the same server (proto via server
#      reflection, queries cycled from the file), after a short warm-up, and
#      prints requests/s, p50, p99 and errors for each, and Select's share of
#      the health check's throughput;
#   5. sends SIGTERM during a ghz Select run and checks that the server exits
#      0 having failed no call it accepted (its log lists every failed call);
#      calls started after the shutdown began are refused (UNAVAILABLE),
#      which ghz counts as errors.
#
# Usage (from anywhere):
#
#	bash api/loadtest.sh                # catalogs of 200 and 10,000 tools
#	SIZES="200" CONCURRENCY=50 REQUESTS=100000 bash api/loadtest.sh
#
# Environment: SIZES (default "200 10000"), CONCURRENCY (ghz -c, 50),
# REQUESTS (ghz -n, 100000), CONNECTIONS (ghz --connections, 1), MODE (the
# Select mode, "" for hybrid), GHZ and GRPCURL (binaries to use; by default
# the ones on PATH, or else pinned versions installed with `go install`
# into the temporary directory). The server and ghz share the machine's
# cores; say so when quoting the figures.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
sizes=${SIZES:-"200 10000"}
conc=${CONCURRENCY:-50}
reqs=${REQUESTS:-100000}
conns=${CONNECTIONS:-1}
mode=${MODE:-}
ghz_version=v0.93.0
grpcurl_version=v1.9.4

work=$(mktemp -d)
server_pid=
cleanup() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

log() { echo "loadtest: $*" >&2; }

# tool NAME MODULE VERSION finds a binary on PATH or installs it.
tool() {
	local name=$1 module=$2 version=$3
	if command -v "$name" >/dev/null; then
		command -v "$name"
		return
	fi
	log "installing $module@$version"
	(cd "$work" && GOBIN=$work/bin GOFLAGS=-mod=mod go install "$module@$version" >&2)
	echo "$work/bin/$name"
}
ghz=${GHZ:-$(tool ghz github.com/bojand/ghz/cmd/ghz "$ghz_version")}
grpcurl=${GRPCURL:-$(tool grpcurl github.com/fullstorydev/grpcurl/cmd/grpcurl "$grpcurl_version")}

log "building habilis"
(cd "$root" && go build -o "$work/habilis" ./cmd/habilis && go build -o "$work/synth" ./api/internal/synth)

# start_server N starts serving catalog N and sets server_pid and addr.
start_server() {
	local n=$1
	rm -f "$work/h-$n.db"
	"$work/habilis" --store "$work/h-$n.db" serve --addr 127.0.0.1:0 --tools "$work/tools-$n.json" \
		>"$work/serve-$n.out" 2>"$work/serve-$n.log" &
	server_pid=$!
	addr=
	while [[ -z $addr ]]; do
		if ! kill -0 "$server_pid" 2>/dev/null; then
			log "serve exited:"
			cat "$work/serve-$n.log" >&2
			exit 1
		fi
		addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/serve-$n.out")
		[[ -n $addr ]] || sleep 0.2
	done
}

# stop_server sends SIGTERM and sets rc to the server's exit code.
stop_server() {
	kill -TERM "$server_pid"
	rc=0
	wait "$server_pid" || rc=$?
	server_pid=
}

# summarize LABEL FILE prints one line from a ghz summary.
summarize() {
	awk -v label="$1" '
		/Requests\/sec:/ { rps = $2 }
		/^ *50 % in/ { p50 = $4 " " $5 }
		/^ *99 % in/ { p99 = $4 " " $5 }
		/Status code distribution:/ { codes = 1; next }
		/Error distribution:/ { codes = 0 }
		codes && /\[/ { if ($1 == "[OK]") ok += $2; else errs += $2 }
		END { printf "%-34s %10.0f req/s   p50 %-10s p99 %-10s ok %d  errors %d\n", label, rps, p50, p99, ok, errs + 0 }
	' "$2"
}

run_ghz() { "$ghz" --insecure -c "$conc" --connections "$conns" "$@"; }

# cpu_ticks prints the server's user + system CPU time in clock ticks
# (Linux /proc), or 0 where there is no /proc.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat" 2>/dev/null || echo 0; }

# measure LABEL FILE ARGS... runs ghz and prints its summary with the
# server's CPU time per call: what a call costs the server, apart from the
# load generator sharing the machine.
measure() {
	local label=$1 out=$2
	shift 2
	local before after
	before=$(cpu_ticks)
	run_ghz -n "$reqs" "$@" "$addr" >"$out"
	after=$(cpu_ticks)
	summarize "$label" "$out"
	awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$reqs" \
		'BEGIN { if (t > 0) printf "%-34s server CPU %.0f µs per call\n", "", 1e6 * t / hz / n }'
}

for n in $sizes; do
	echo
	echo "== catalog of $n tools (ghz -c $conc -n $reqs --connections $conns; $(nproc) cores shared by server and ghz)"
	"$work/synth" -n "$n" -o "$work/tools-$n.json" -queries "$work/queries-$n.json"
	start_server "$n"
	echo "$(cat "$work/serve-$n.out") (pid $server_pid)"

	echo "-- grpcurl -plaintext $addr list"
	"$grpcurl" -plaintext "$addr" list
	query=$(sed -n 's/^\[{"query":"\([^"]*\)".*/\1/p' "$work/queries-$n.json")
	echo "-- grpcurl -plaintext -d '{\"query\": \"$query\", \"k\": 1}' $addr habilis.v1.ToolRouter/Select"
	"$grpcurl" -plaintext -d "{\"query\": \"$query\", \"k\": 1, \"mode\": \"$mode\"}" "$addr" habilis.v1.ToolRouter/Select |
		grep -E '"(query|mode|abstained|tool|score|passed)"' | head -8

	sed "s/}/,\"mode\":\"$mode\"}/g" "$work/queries-$n.json" >"$work/select-$n.json"
	log "warming up"
	run_ghz -n 5000 --call grpc.health.v1.Health.Check -d '{}' "$addr" >/dev/null
	run_ghz -n 5000 --call habilis.v1.ToolRouter.Select -D "$work/select-$n.json" "$addr" >/dev/null

	echo "-- results"
	measure "grpc.health.v1.Health/Check" "$work/health-$n.txt" --call grpc.health.v1.Health.Check -d '{}'
	measure "habilis.v1.ToolRouter/Select" "$work/select-$n.txt" --call habilis.v1.ToolRouter.Select -D "$work/select-$n.json"
	h=$(awk '/Requests\/sec:/ { print $2 }' "$work/health-$n.txt")
	s=$(awk '/Requests\/sec:/ { print $2 }' "$work/select-$n.txt")
	awk -v h="$h" -v s="$s" 'BEGIN { printf "Select / health throughput: %.0f %%\n", 100 * s / h }'

	echo "-- SIGTERM during a ghz Select run"
	run_ghz -n "$reqs" --call habilis.v1.ToolRouter.Select -D "$work/select-$n.json" "$addr" >"$work/term-$n.txt" 2>&1 &
	ghz_pid=$!
	sleep 2
	stop_server
	wait "$ghz_pid" || true
	summarize "Select, server stopped midway" "$work/term-$n.txt"
	sed -n '/Error distribution:/,$p' "$work/term-$n.txt" | head -6
	failed=$(grep -c 'rpc failed' "$work/serve-$n.log" || true)
	echo "serve exit code: $rc; calls the server failed: $failed; last output: $(tail -1 "$work/serve-$n.out")"
	if [[ $rc != 0 || $failed != 0 ]]; then
		log "shutdown was not clean:"
		cat "$work/serve-$n.log" >&2
		exit 1
	fi
done
