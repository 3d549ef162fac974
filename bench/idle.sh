#!/usr/bin/env bash
# Idle benchmark: what the daemon costs a node where nothing happens.
#
# Lays out PODS pods (110) as execstorm.sh does, each container holding a
# sleeping process, starts the daemon on them (--no-api --no-runtime,
# metrics on, OTLP to a real collector: bench/lib.sh's start_daemon), lets it
# settle SETTLE seconds, then measures SECS seconds: its CPU (utime+stime of
# the whole process) and its context switches (voluntary and involuntary, all
# threads) per second, and its RSS. Each wakeup of an idle process is a
# context switch; on a virtual machine each costs several microseconds.
#
# BINS="a b" alternates several builds within each round (default: bin/tracer,
# built here). IDLE_RUNTIME=1 gives the daemon a runtime to watch: a private
# containerd (Debian's, or $PODCHRON_CONTAINERD) with its own root, state and
# socket under the bench's directory and no pods of its own, so the daemon's
# runtime source (its polls and its progress reports) is measured too.
# Needs root (the probes).
#
# Usage: bench/idle.sh [ROUNDS] [SECS]   (env: BINS, PODS=110, SETTLE=10, IDLE_RUNTIME)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-20}
PODS=${PODS:-110}
SETTLE=${SETTLE:-10}
[ "$(id -u)" -eq 0 ] || { echo "idle: needs root" >&2; exit 1; }
export PATH=$PATH:/usr/local/go/bin
. bench/lib.sh

if [ -z "${BINS:-}" ]; then
	go build -o bin/tracer ./cmd/tracer
	BINS=bin/tracer
fi
read -r -a bins <<<"$BINS"
otelcol=$(bash test/otlp/build-collector.sh)

bench_node idle "$otelcol"

if [ -n "${IDLE_RUNTIME:-}" ]; then
	ctrd=$work/containerd
	mkdir -p "$ctrd"
	printf '%s\n' 'version = 2' "root = \"$ctrd/root\"" "state = \"$ctrd/state\"" \
		'[grpc]' "  address = \"$ctrd/containerd.sock\"" '[ttrpc]' "  address = \"$ctrd/containerd.sock.ttrpc\"" \
		'[plugins."io.containerd.grpc.v1.cri"]' '  stream_server_address = "127.0.0.1"' '  stream_server_port = "0"' >"$ctrd/config.toml"
	"${PODCHRON_CONTAINERD:-containerd}" --config "$ctrd/config.toml" >"$ctrd/log" 2>&1 &
	ctrd_pid=$!
	trap 'kill $ctrd_pid 2>/dev/null; wait $ctrd_pid 2>/dev/null; stop_bench; rm_tree "$v2$root"; rm -rf "$work"' EXIT
	for _ in $(seq 100); do [ -S "$ctrd/containerd.sock" ] && break; sleep 0.1; done
	[ -S "$ctrd/containerd.sock" ] || { cat "$ctrd/log" >&2; exit 1; }
	export DAEMON_SOURCES="--no-api --runtime-endpoint unix://$ctrd/containerd.sock"
fi

switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }

printf '%-5s %-28s %12s %12s %9s\n' round binary "cpu ms/s" "switches/s" "RSS MiB"
for r in $(seq "$ROUNDS"); do
	for b in "${bins[@]}"; do
		TRACER_BIN=$b start_daemon "$work/daemon.log"
		sleep "$SETTLE"
		t0=$(cpu_ticks "$tracer_pid") c0=$(switches "$tracer_pid") s0=$(date +%s.%N)
		sleep "$SECS"
		t1=$(cpu_ticks "$tracer_pid") c1=$(switches "$tracer_pid") s1=$(date +%s.%N)
		rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$tracer_pid"/status)
		kill "$tracer_pid"
		wait "$tracer_pid" 2>/dev/null || true
		tracer_pid=''
		awk -v r="$r" -v b="$b" -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v c=$((c1 - c0)) -v s0="$s0" -v s1="$s1" -v rss="$rss" \
			'BEGIN {d = s1 - s0; printf "%-5s %-28s %12.2f %12.1f %9s\n", r, b, t * 1000 / hz / d, c / d, rss}' | tee -a "$work/rows"
	done
done
echo
echo "medians over $ROUNDS rounds of ${SECS}s, $PODS pods, ${DAEMON_SOURCES:---no-api --no-runtime}, $(nproc) CPUs, kernel $(uname -r), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "${bins[@]}"; do
	cpu=$(awk -v b="$b" '$2 == b {print $3}' "$work/rows" | median)
	sw=$(awk -v b="$b" '$2 == b {print $4}' "$work/rows" | median)
	printf '%-28s cpu %6s ms/s   context switches %7s /s\n' "$b" "$cpu" "$sw"
done
