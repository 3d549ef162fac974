#!/usr/bin/env bash
# In-kernel time per program over one exec storm: where execstorm.sh's
# "kern ns/exec" goes. Runs the daemon (--no-api --no-runtime) on a private
# watched root, one storm of N execs of /bin/true in a container cgroup of
# it, and prints each program's runs, ns per run and ns per exec from
# `bpftool prog show` (run_time_ns, run_cnt; kernel.bpf_stats_enabled=1).
#
# With SIGNALS=1 the storm is a signal flood instead: one bash in the
# container cgroup sends itself N SIGUSR1s (handled by a trap, so both
# signal_generate and signal_deliver run), and the lines are per signal; a
# cgroup's signal budget (--signal-rate, --signal-burst) refuses most of
# them, --signal-rate -1 makes every one a record.
#
# TRACER=path runs that binary instead of building bin/tracer (another build
# of the probes); STORM_PREFIX is put before the storm's command (e.g.
# "taskset -c 1": the fork, exec and exit all on one CPU).
#
# Usage (root): [SIGNALS=1] [TRACER=bin] [STORM_PREFIX=cmd] bash bench/perprog.sh [N] [tracer flags, e.g. --all-processes]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
shift || true
[ "$(id -u)" -eq 0 ] || { echo "perprog: needs root" >&2; exit 1; }
export PATH=$PATH:/usr/local/go/bin
tracer=${TRACER:-}
if [ -z "$tracer" ]; then
	go build -o bin/tracer ./cmd/tracer
	tracer=bin/tracer
fi
go build -o bin/execstorm ./bench/execstorm

if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then v2=/sys/fs/cgroup
elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then v2=/sys/fs/cgroup/unified
else echo "perprog: no cgroup2 mount" >&2; exit 1; fi
root=/podchron-perprog-$$
ctr=$v2$root/burstable/pod$(cat /proc/sys/kernel/random/uuid)/ctr
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
work=$(mktemp -d)
tracer_pid=
cleanup() {
	[ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	[ -d "$v2$root" ] && find "$v2$root" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$(dirname "$ctr")"
sysctl -qw kernel.bpf_stats_enabled=1
"$tracer" --cgroup-root "$root" --no-api --no-runtime --node-name perprog --metrics-addr 127.0.0.1:0 "$@" \
	>/dev/null 2>"$work/tracer.log" &
tracer_pid=$!
for _ in $(seq 100); do grep -q "probes attached" "$work/tracer.log" && break; sleep 0.1; done
sleep 1

# "id name run_time_ns run_cnt" of the tracer's own programs (its program
# fds; a link's fdinfo has no run_time_ns), not of other tracers running.
stats() {
	for f in /proc/"$tracer_pid"/fdinfo/*; do
		awk '/^prog_id:/ {id=$2} /^run_time_ns:/ {t=$2} /^run_cnt:/ {c=$2}
		     END {if (id != "" && t != "") print id, t, c}' "$f" 2>/dev/null || true
	done | sort -u -k1,1 | while read -r id t c; do
		echo "$id $(bpftool prog show id "$id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])') $t $c"
	done
}
stats >"$work/before"
mkdir "$ctr"
if [ "${SIGNALS:-0}" = 1 ]; then
	t0=$(date +%s.%N)
	bash -c 'echo $$ >"$1/cgroup.procs"; trap : USR1; for ((i = 0; i < $2; i++)); do kill -USR1 $$; done' flood "$ctr" "$N"
	echo "signal flood: $N signals in $(echo "$(date +%s.%N) - $t0" | bc) s" >&2
else
	${STORM_PREFIX:-} bin/execstorm -n "$N" -cgroup "$ctr" >/dev/null
fi
stats >"$work/after"
unit=exec
[ "${SIGNALS:-0}" = 1 ] && unit=signal
python3 - "$work/before" "$work/after" "$N" "$unit" <<'EOF'
import sys
before = {l.split()[0]: l.split() for l in open(sys.argv[1])}
n = int(sys.argv[3])
unit = sys.argv[4]
total = 0
for l in open(sys.argv[2]):
    pid, name, t, c = l.split()
    if pid not in before:
        continue
    dt, dc = int(t) - int(before[pid][2]), int(c) - int(before[pid][3])
    if dc == 0:
        continue
    total += dt
    print(f"{name:24s} runs {dc:8d}  ns/run {dt / dc:6.0f}  ns/{unit} {dt / n:6.0f}")
print(f"{'all programs':24s} {'':28s} ns/{unit} {total / n:6.0f}")
EOF
