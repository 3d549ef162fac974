#!/usr/bin/env bash
# A/B of builds of the probes on execstorm.sh's node and storm: the in-kernel
# time per exec of each build's daemon, against the floor (the first build
# with every program returning at once), alternated in rounds whose order
# rotates. What execstorm.sh's in-kernel verdict would say of each build,
# in one run, so a change to bpf/ is judged beside its parent on the same
# machine and day (bench/perprog.sh's per-program figures are noisier: each
# run loads the probes anew on an empty node).
#
# Usage (root): bash bench/abstorm.sh N ROUNDS BIN [BIN ...]
#   e.g. git stash; go build -o /tmp/tracer-a ./cmd/tracer; git stash pop;
#        go build -o /tmp/tracer-b ./cmd/tracer; bash bench/abstorm.sh 10000 5 /tmp/tracer-a /tmp/tracer-b
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=$1 ROUNDS=$2
shift 2
[ $# -ge 1 ] || { echo "usage: abstorm.sh N ROUNDS BIN [BIN ...]" >&2; exit 2; }
bins=("$@")
PODS=${PODS:-110}
[ "$(id -u)" -eq 0 ] || { echo "abstorm: needs root" >&2; exit 1; }
export PATH=$PATH:/usr/local/go/bin
go build -o bin/execstorm ./bench/execstorm
otelcol=$(bash test/otlp/build-collector.sh)

bench_node abstorm "$otelcol"


sysctl -qw kernel.bpf_stats_enabled=1
bin/execstorm -n 500 >/dev/null
storm >/dev/null
modes=(floor)
for i in "${!bins[@]}"; do modes+=("$i"); done
# FLOOR_EACH=1: each further build's own floor too (f<i>), for builds that
# change what the floor itself reads.
if [ "${FLOOR_EACH:-0}" = 1 ]; then
	for i in "${!bins[@]}"; do [ "$i" -gt 0 ] && modes+=("f$i"); done
fi
nm=${#modes[@]}
for r in $(seq "$ROUNDS"); do
	for k in $(seq 0 $((nm - 1))); do
		mode=${modes[$(((k + r - 1) % nm))]}
		log="$work/$mode.$r.log"
		if [ "$mode" = floor ]; then
			TRACER_BIN=${bins[0]} PODCHRON_BENCH_NOOP_PROGRAMS=1 start_daemon "$log"
		elif [ "${mode#f}" != "$mode" ]; then
			TRACER_BIN=${bins[${mode#f}]} PODCHRON_BENCH_NOOP_PROGRAMS=1 start_daemon "$log"
		else
			TRACER_BIN=${bins[$mode]} PODCHRON_BENCH_NOOP_PROGRAMS=0 start_daemon "$log"
		fi
		read -r t0 _ <<<"$(prog_stats "$tracer_pid")"
		res=$(storm)
		read -r t1 _ <<<"$(prog_stats "$tracer_pid")"
		kill -INT "$tracer_pid"; wait "$tracer_pid" || true; tracer_pid=
		n=$(echo "$res" | awk '{print $1}')
		awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN {printf "%.0f\n", (b - a) / n}' >>"$work/kns.$mode"
	done
done
floor=$(median <"$work/kns.floor")
echo "---- abstorm: N=$N, $ROUNDS rounds, $PODS pods, $(nproc) CPUs, kernel $(uname -r), $(date -u +%FT%TZ)"
printf '%-32s %12s %8s  %s\n' build "kern ns/exec" "x floor" "rounds"
printf '%-32s %12s %8s  %s\n' floor "$floor" 1.00 "$(paste -sd' ' "$work/kns.floor")"
for i in "${!bins[@]}"; do
	m=$(median <"$work/kns.$i")
	printf '%-32s %12s %8s  %s\n' "${bins[$i]}" "$m" "$(awk -v a="$m" -v b="$floor" 'BEGIN {printf "%.2f", a / b}')" "$(paste -sd' ' "$work/kns.$i")"
	if [ -f "$work/kns.f$i" ]; then
		f=$(median <"$work/kns.f$i")
		printf '%-32s %12s %8s  %s\n' "  its own floor" "$f" "$(awk -v a="$f" -v b="$floor" 'BEGIN {printf "%.2f", a / b}')" "$(paste -sd' ' "$work/kns.f$i")"
	fi
done
