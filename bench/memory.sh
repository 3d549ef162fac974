#!/usr/bin/env bash
# Memory benchmark: the tracer's resident memory, by part, as the daemon runs
# on a node with nothing to trace.
#
# Runs the daemon (tracer --no-api --no-runtime, metrics on, no OTLP, no
# checkpoint) ROUNDS times for SECS seconds each, watching an empty cgroup
# root, then reads VmRSS and VmHWM (/proc/<pid>/status) and the breakdown the
# daemon exports (podchron_process_memory_bytes{part}), and prints each run
# and the medians in MiB, with the load average (the machine may be shared).
#
# The binaries: built here as the image builds them (CGO_ENABLED=0, -trimpath,
# -ldflags "-s -w"), or BINS="path ..." to compare several (alternated within
# each round). Needs root (the probes).
#
# Usage: bench/memory.sh [ROUNDS] [SECS]   (env: BINS, EXTRA="more tracer flags")
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-15}
EXTRA=${EXTRA:-}
[ "$(id -u)" -eq 0 ] || { echo "memory: needs root" >&2; exit 1; }
export PATH=$PATH:/usr/local/go/bin
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${BINS:-}" ]; then
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=bench" -o bin/tracer ./cmd/tracer
	BINS=bin/tracer
fi
read -r -a bins <<<"$BINS"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
parts=(binary_text binary_rodata binary_data bpf_maps files_other go_heap_inuse go_heap_free go_stacks go_gc_metadata go_runtime_other anon_other)
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

run() { # bin -> one line: VmRSS VmHWM part...
	local bin=$1 port log=$work/log
	port=$(free_port)
	# shellcheck disable=SC2086 # EXTRA is a list of flags
	"$bin" --no-api --no-runtime --node-name bench --output none --state-dir= \
		--cgroup-root "/podchron-memory-bench-$$" --metrics-addr "127.0.0.1:$port" $EXTRA >/dev/null 2>"$log" &
	pid=$!
	# This runs in a command substitution: the EXIT trap cannot see pid, so
	# every way out of here stops the tracer itself.
	stop() { kill -INT "$pid" 2>/dev/null || true; wait "$pid" || true; pid=; }
	for _ in $(seq 600); do grep -q "probes attached" "$log" && break; sleep 0.1; done
	if ! grep -q "probes attached" "$log"; then
		stop
		echo "memory: $bin: probes not attached in 60 s: $(tail -3 "$log")" >&2
		return 1
	fi
	sleep "$SECS"
	curl -fsS "http://127.0.0.1:$port/metrics" >"$work/metrics" || true
	local rss hwm
	rss=$(awk '/^VmRSS/ {print $2 * 1024}' "/proc/$pid/status")
	hwm=$(awk '/^VmHWM/ {print $2 * 1024}' "/proc/$pid/status")
	stop
	if [ -z "$rss" ] || ! grep -q '^podchron_process_memory_bytes' "$work/metrics"; then
		echo "memory: $bin: no figures (log: $(tail -3 "$log"))" >&2
		return 1
	fi
	local line="$rss $hwm"
	for p in "${parts[@]}"; do
		line+=" $(awk -v p="part=\"$p\"" 'index($0, "podchron_process_memory_bytes{" p "}") == 1 {printf "%d", $2}' "$work/metrics")"
	done
	echo "$line"
}

hdr() { printf '%-5s %-28s %6s %6s' round binary RSS HWM; for p in "${parts[@]}"; do printf ' %8.8s' "$p"; done; printf '  %s\n' load; }
hdr
for r in $(seq "$ROUNDS"); do
	for k in $(seq 0 $((${#bins[@]} - 1))); do
		b=${bins[$(((k + r - 1) % ${#bins[@]}))]}
		if ! out=$(run "$b"); then
			echo "round $r: $(basename "$b") failed, left out" >&2
			continue
		fi
		read -r -a v <<<"$out"
		echo "${v[*]}" >>"$work/runs.$(basename "$b")"
		printf '%-5s %-28s' "$r" "$(basename "$b")"
		for x in "${v[@]}"; do printf ' %6s' "$(mib "$x")"; done
		printf '  %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	done
done
echo
echo "---- medians (MiB), $ROUNDS rounds of ${SECS}s, kernel $(uname -r), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
hdr
for b in "${bins[@]}"; do
	f="$work/runs.$(basename "$b")"
	printf '%-5s %-28s' med "$(basename "$b")"
	n=$(head -1 "$f" | wc -w)
	for i in $(seq "$n"); do
		printf ' %6s' "$(mib "$(cut -d' ' -f"$i" "$f" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')")"
	done
	echo
done
