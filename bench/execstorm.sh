#!/usr/bin/env bash
# Exec-storm benchmark: N short execs in a watched cgroup, with the tracer off
# and on, alternating for ROUNDS rounds. Prints exec rates and their ratio,
# events expected vs received, kernel loss counters, tracer CPU per event
# (utime+stime from /proc/<pid>/stat), in-kernel time per exec (bpf_stats)
# and the tracer's peak RSS. Needs root. Usage: bench/execstorm.sh [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20000}
ROUNDS=${2:-3}
OUTPUT=${OUTPUT:-none}   # the tracer's --output while measured: none, json or text
[ "$(id -u)" -eq 0 ] || { echo "execstorm: needs root" >&2; exit 1; }

go build -o bin/tracer ./cmd/tracer
go build -o bin/execstorm ./bench/execstorm

if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then v2=/sys/fs/cgroup
elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then v2=/sys/fs/cgroup/unified
else echo "execstorm: no cgroup2 mount" >&2; exit 1; fi
root=/podchron-bench-$$
mkdir "$v2$root"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
work=$(mktemp -d)
tracer_pid=
cleanup() {
	[ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	for d in "$v2$root"/*/ "$v2$root"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
storm() { # $1 = cgroup name; prints "n seconds rate"
	mkdir -p "$v2$root/$1"
	bin/execstorm -n "$N" -cgroup "$v2$root/$1"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

sysctl -qw kernel.bpf_stats_enabled=1
bin/execstorm -n 500 >/dev/null # warm up caches
for r in $(seq "$ROUNDS"); do
	off=$(storm "off$r")
	echo "$off" | awk '{print $3}' >>"$work/off"

	bin/tracer events --cgroup-root "$root" --output "$OUTPUT" >"$work/out$r" 2>"$work/log$r" &
	tracer_pid=$!
	for _ in $(seq 100); do grep -q "probes attached" "$work/log$r" && break; sleep 0.1; done
	grep -q "probes attached" "$work/log$r" || { cat "$work/log$r"; exit 1; }
	prog_id=$(bpftool prog show -j | python3 -c 'import json,sys; print([p["id"] for p in json.load(sys.stdin) if p.get("name")=="handle_exec"][-1])')
	c0=$(cpu_ticks "$tracer_pid")
	on=$(storm "on$r")
	sleep 0.5 # let the reader drain (it polls every 100 ms)
	c1=$(cpu_ticks "$tracer_pid")
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$tracer_pid/status")
	stats=$(bpftool prog show id "$prog_id" -j | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p.get("run_time_ns",0), p.get("run_cnt",0))')
	kill -INT "$tracer_pid"; wait "$tracer_pid" || true; tracer_pid=
	echo "$on" | awk '{print $3}' >>"$work/on"
	received=$(grep -o 'received=[0-9]*' "$work/log$r" | cut -d= -f2)
	lost=$(grep -o '[a-z_]*=[0-9]*/[0-9]*' "$work/log$r" | awk -F'[=/]' '{s+=$3} END {print s}')
	# The storm's cgroup is made (1 mkdir), the storm process joins it and
	# forks+execs N children that exit, then exits itself:
	# 1 + N forks + N execs + N exits + 1 exit (no signals: SIGCHLD is filtered).
	expected=$((3 * N + 2))
	cpu_us=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v n="$received" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
	kns=$(echo "$stats" | awk '{ if ($2 > 0) printf "%.0f", $1 / $2; else print "n/a" }')
	printf 'round %d: off %s exec/s, on %s exec/s, events expected %d received %d lost %d, tracer CPU %s us/event, in-kernel %s ns/exec (%s runs), peak RSS %d KiB\n' \
		"$r" "$(echo "$off" | awk '{print $3}')" "$(echo "$on" | awk '{print $3}')" "$expected" "$received" "$lost" "$cpu_us" "$kns" "$(echo "$stats" | awk '{print $2}')" "$rss"
	echo "$cpu_us" >>"$work/cpu"; echo "$kns" >>"$work/kns"; echo "$rss" >>"$work/rss"; echo "$lost" >>"$work/lost"
	echo $((expected - received)) >>"$work/missing"
done

off=$(median <"$work/off"); on=$(median <"$work/on")
echo "---- execstorm: N=$N execs per run, $ROUNDS rounds, tracer --output $OUTPUT, $(nproc) CPUs, kernel $(uname -r)"
printf 'exec rate off (median)      %10.1f exec/s\n' "$off"
printf 'exec rate on  (median)      %10.1f exec/s\n' "$on"
printf 'ratio on/off                %10.3f   (target >= 0.98)\n' "$(awk -v a="$on" -v b="$off" 'BEGIN {print a / b}')"
printf 'tracer CPU per event        %10s us (median; target <= 2)\n' "$(median <"$work/cpu")"
printf 'in-kernel per exec          %10s ns (median; target <= 1500)\n' "$(median <"$work/kns")"
printf 'events lost (all rounds)    %10d    (target 0)\n' "$(awk '{s+=$1} END {print s}' "$work/lost")"
printf 'events missing (all rounds) %10d    (expected - received)\n' "$(awk '{s+=$1} END {print s}' "$work/missing")"
printf 'tracer peak RSS (max)       %10d KiB (target <= 65536)\n' "$(sort -n "$work/rss" | tail -1)"
