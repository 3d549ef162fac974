#!/usr/bin/env bash
# Exec-storm benchmark: what the tracer costs a node, measured on the daemon
# users run, beside the raw event reader and the floor of the same hooks.
#
# Layout (as a kubelet makes it, under a private watched root): 110 pod cgroups
# <root>/burstable/pod<uid>/<container id>, each holding a sleeping process;
# the storm runs in a container cgroup of one more pod (made anew per storm):
# its PID 1 (bench/execstorm, re-exec'd in the cgroup) fork+execs /bin/true N
# times.
#
# Modes, alternated within each round (the order rotates every round):
#   off     no tracer
#   floor   the daemon with every BPF program returning at once
#           (PODCHRON_BENCH_NOOP_PROGRAMS=1, benchmark only): the cost of
#           the hooks themselves
#   events  tracer events --all-processes --output none (probes + ring-buffer
#           reader + decode, every process a record)
#   daemon  tracer --no-api --no-runtime with the watched root, metrics on,
#           OTLP to a real OpenTelemetry Collector (test/otlp/build-collector.sh),
#           correlating the 110 pods, at the defaults: only the roots of a
#           cgroup's process tree are records (the storm's PID 1, not the
#           children it forks)
#   all     the daemon with --all-processes: every fork, exec and exit a record
#   ig      (only with IG=<path to ig>) ig trace exec --host --auto-mount-filesystems -o json > /dev/null
#
# Per storm: exec rate; the tracer's CPU (utime+stime of the whole process)
# per exec; in-kernel time per exec summed over ALL of the tracer's programs
# (run_time_ns from /proc/<tracer>/fdinfo of its program fds, with
# kernel.bpf_stats_enabled=1; deltas over the storm / N); events emitted and
# lost. Then a separate 60 s phase of the daemon with --all-processes at the
# machine's maximum storm (one storm per CPU): events lost from the metrics endpoint
# (podchron_probe_events_lost_total) and the daemon's log. Finally the 110
# pods are torn down under the daemon, and the pod spans the collector
# received are counted (the daemon really tracked them).
#
# Needs root. Usage: bench/execstorm.sh [N] [ROUNDS]   (env: IG=path, LOSS_SECS=60)
#
# ig: IG=<binary> adds Inspektor Gadget's `ig trace exec --host` as a mode;
# IG=$(bash bench/build-ig.sh) builds v0.26.0 from the Go module proxy (the
# last kind with built-in gadgets; see that script for why and how).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-20000}
ROUNDS=${2:-3}
LOSS_SECS=${LOSS_SECS:-60}
PODS=${PODS:-110}
IG=${IG:-}
[ "$(id -u)" -eq 0 ] || { echo "execstorm: needs root" >&2; exit 1; }
export PATH=$PATH:/usr/local/go/bin

go build -o bin/tracer ./cmd/tracer
go build -o bin/execstorm ./bench/execstorm
otelcol=$(bash test/otlp/build-collector.sh)

v2=$(bench_v2)
root=/podchron-bench-$$
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
debugfs_before=$(grep -c ' /sys/kernel/debug debugfs ' /proc/mounts || true)
work=$(mktemp -d)
tracer_pid= col_pid=
sleepers=()
cleanup() {
	stop_bench
	# ig mounts debugfs when it is missing: leave the host as it was.
	if [ "$debugfs_before" = 0 ] && grep -q ' /sys/kernel/debug debugfs ' /proc/mounts; then umount /sys/kernel/debug || true; fi
	rm_tree "$v2$root"
	if [ "${KEEP:-0}" = 1 ]; then echo "execstorm: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# ---- the node: PODS pods, one container each, a sleeping process in each
make_sleeping_pods

# ---- the collector
start_collector "$otelcol"

metrics_port=$(free_port)
hz=$(getconf CLK_TCK)

start_tracer() { # mode log
	local mode=$1 log=$2
	case $mode in
	events)
		bin/tracer events --cgroup-root "$root" --all-processes --output none >/dev/null 2>"$log" &
		tracer_pid=$!; wait_log "$log" "probes attached" ;;
	daemon|floor|all)
		local noop=0 extra=(); [ "$mode" = floor ] && noop=1; [ "$mode" = all ] && extra=(--all-processes)
		PODCHRON_BENCH_NOOP_PROGRAMS=$noop start_daemon "$log" "${extra[@]}" ;;
	ig)
		"$IG" trace exec --host --auto-mount-filesystems -o json >/dev/null 2>"$log" &
		tracer_pid=$!
		# ig prints nothing when ready: wait until its programs are loaded.
		for _ in $(seq 300); do [ "$(prog_stats "$tracer_pid" | awk '{print $3}')" -gt 0 ] && break; sleep 0.1; done
		sleep 1 ;;
	esac
}

sysctl -qw kernel.bpf_stats_enabled=1
bin/execstorm -n 500 >/dev/null # warm up caches
storm >/dev/null                  # and the storm pod's path, unmeasured
modes=(off floor events daemon all)
[ -n "$IG" ] && modes+=(ig)
nm=${#modes[@]}
# Every storm, as events go: its cgroup's mkdir, the PID 1's re-exec and
# exit, N forks + N execs + N exits (SIGCHLD is filtered; the cgroups are
# removed at the end). At the defaults only the process tree's roots are
# reported: the mkdir and PID 1's exec and exit.
expected=$((3 * N + 3))
expected_roots=3
hdr() { printf '%-6s %-7s %9s %7s %11s %12s %9s %6s %6s %9s\n' "$@"; }
hdr round mode exec/s ratio "cpu us/exec" "kern ns/exec" emitted lost progs "RSS KiB"
for r in $(seq "$ROUNDS"); do
	off_rate= lines=()
	for k in $(seq 0 $((nm - 1))); do
		mode=${modes[$(((k + r - 1) % nm))]}
		log="$work/$mode$r.log"
		emitted=- lost=- cpu=- kns=- progs=- rss=-
		if [ "$mode" = off ]; then
			res=$(storm)
		else
			start_tracer "$mode" "$log"
			read -r t0 c0 _ <<<"$(prog_stats "$tracer_pid")"
			k0=$(cpu_ticks "$tracer_pid")
			res=$(storm)
			sleep 1 # let the reader drain (polls every 100 ms) and the model catch up
			k1=$(cpu_ticks "$tracer_pid")
			read -r t1 c1 progs <<<"$(prog_stats "$tracer_pid")"
			rss=$(awk '/VmHWM/ {print $2}' "/proc/$tracer_pid/status")
			if [ "$mode" = daemon ] || [ "$mode" = floor ] || [ "$mode" = all ]; then
				emitted=$(metric podchron_probe_events_total)
				lost=$(metric podchron_probe_events_lost_total)
			fi
			kill -INT "$tracer_pid"; wait "$tracer_pid" || true; tracer_pid=
			if [ "$mode" = events ]; then
				emitted=$(grep -o 'received=[0-9]*' "$log" | cut -d= -f2)
				lost=$(grep -o '[a-z_]*=[0-9]*/[0-9]*' "$log" | awk -F'[=/]' '{s+=$3} END {print s}')
			fi
			n=$(echo "$res" | awk '{print $1}')
			cpu=$(awk -v a="$k0" -v b="$k1" -v hz="$hz" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
			kns=$(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN {printf "%.0f", (b - a) / n}')
			echo "$cpu" >>"$work/cpu.$mode"; echo "$kns" >>"$work/kns.$mode"; echo "$rss" >>"$work/rss.$mode"
			[ "$lost" != - ] && echo "$lost" >>"$work/lost.$mode"
			[ "$emitted" != - ] && echo "$emitted" >>"$work/emitted.$mode"
			if [ "$mode" = daemon ]; then
				grep -o 'live_pods=[0-9]*' "$log" | cut -d= -f2 >>"$work/livepods"
			fi
		fi
		rate=$(echo "$res" | awk '{print $3}')
		echo "$rate" >>"$work/rate.$mode"
		[ "$mode" = off ] && off_rate=$rate
		lines+=("$mode $rate $cpu $kns $emitted $lost $progs $rss")
	done
	for l in "${lines[@]}"; do
		read -r mode rate cpu kns emitted lost progs rss <<<"$l"
		# Each mode's rate against off's in the same round: the pairs the
		# alternation is for.
		awk -v a="$rate" -v b="$off_rate" 'BEGIN {printf "%.4f\n", a / b}' >>"$work/pair.$mode"
		hdr "$r" "$mode" "$rate" "$(awk -v a="$rate" -v b="$off_rate" 'BEGIN {printf "%.3f", a / b}')" "$cpu" "$kns" "$emitted" "$lost" "$progs" "$rss"
	done
done

# ---- the daemon at the machine's maximum storm, LOSS_SECS seconds, with
# --all-processes: every fork, exec and exit of the storm is a record (at the
# defaults the storm's children are below its root and cost no record).
nproc=$(nproc)
log="$work/loss.log"
start_tracer all "$log"
l0=$(metric podchron_probe_events_lost_total); e0=$(metric podchron_probe_events_total)
k0=$(cpu_ticks "$tracer_pid")
storms=()
for i in $(seq "$nproc"); do
	N=1000000000 storm -duration "${LOSS_SECS}s" >"$work/loss.storm$i" &
	storms+=($!)
done
wait "${storms[@]}"
sleep 1
k1=$(cpu_ticks "$tracer_pid")
l1=$(metric podchron_probe_events_lost_total); e1=$(metric podchron_probe_events_total)
loss_execs=$(cat "$work"/loss.storm* | awk '{s += $1} END {print s}')
loss_rate=$(cat "$work"/loss.storm* | awk '{s += $3} END {printf "%.1f", s}')
loss_cpu=$(awk -v a="$k0" -v b="$k1" -v hz="$hz" -v n="$loss_execs" 'BEGIN {printf "%.2f", (b - a) / hz * 1e6 / n}')
loss_rss=$(awk '/VmHWM/ {print $2}' "/proc/$tracer_pid/status")
echo "$loss_rss" >>"$work/rss.daemon"
loss_logged=$(grep -c "kernel events lost" "$log" || true)

# ---- tear the pods down under the daemon: it must end each one's trace
for p in "${sleepers[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${sleepers[@]}" 2>/dev/null || true
sleepers=()
for d in "$v2$root"/burstable/pod*/; do rm_tree "$d"; done
gone_at=$(date +%s.%N)
pods_seen=$(grep -c . "$work/pods")
# Each pod's root span ("pod") comes in a resource carrying the pod's UID:
# wait for all of them (20 s at most), counted in what the collector printed.
pod_spans() {
	awk '/ResourceSpans #/ {uid=""} /-> k8s.pod.uid: Str\(/ {uid=$NF} /^ +Name +: pod$/ {print uid}' "$work/collector.log" |
		grep -oE '[0-9a-f]{8}-[0-9a-f-]{27}' | sort -u | grep -cxFf "$work/pods" || true
}
for _ in $(seq 200); do [ "$(pod_spans)" -ge "$pods_seen" ] && break; sleep 0.1; done
pods_wait=$(awk -v a="$gone_at" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
kill -INT "$tracer_pid"; wait "$tracer_pid" || true; tracer_pid=
pod_spans=$(pod_spans)
pods_exported=$(grep -oE 'k8s.pod.uid: Str\([0-9a-f-]+\)' "$work/collector.log" | grep -oE '[0-9a-f]{8}-[0-9a-f-]{27}' | sort -u | grep -cxFf "$work/pods" || true)

# ---- summary
med() { [ -s "$work/$1" ] && median <"$work/$1" || echo n/a; }
off=$(med rate.off)
echo
echo "---- execstorm: N=$N execs per storm, $ROUNDS rounds, $PODS pods under $root, $nproc CPUs, kernel $(uname -r), $(date -u +%FT%TZ)"
printf '%-7s %10s %7s %12s %13s %10s\n' mode "exec/s" ratio "cpu us/exec" "kern ns/exec" "max RSS KiB"
for mode in "${modes[@]}"; do
	rate=$(med "rate.$mode")
	ratio=$(awk -v a="$rate" -v b="$off" 'BEGIN {printf "%.3f", a / b}')
	rss=-; [ -s "$work/rss.$mode" ] && rss=$(sort -n "$work/rss.$mode" | tail -1)
	printf '%-7s %10.1f %7s %12s %13s %10s\n' "$mode" "$rate" "$ratio" "$(med "cpu.$mode")" "$(med "kns.$mode")" "$rss"
done
span() { sort -g "$work/$1" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}'; }
verdict() { if awk "BEGIN {exit !($1)}"; then echo PASS; else echo MISS; fi; }
d_rate=$(med rate.daemon); d_kns=$(med kns.daemon); f_kns=$(med kns.floor)
d_ratio=$(awk -v a="$d_rate" -v b="$off" 'BEGIN {printf "%.3f", a / b}')
d_pair=$(med pair.daemon); f_pair=$(med pair.floor)
d_rss=$(sort -n "$work/rss.daemon" | tail -1)
lost_rounds=$(cat "$work"/lost.daemon "$work"/lost.all "$work"/lost.events 2>/dev/null | awk '{s += $1} END {print s + 0}')
echo
printf '%-52s %14s  %-18s %s\n' figure value target verdict
printf '%-52s %14s  %-18s %s\n' "exec rate daemon/off (median of the rounds' pairs)" "$d_pair" ">= 0.98" "$(verdict "$d_pair >= 0.98")"
printf '%-52s %14s\n' "  ratio of the medians; floor/off (median of pairs)" "$d_ratio; $f_pair"
# The pairs' spread: how far one storm's rate moves from its neighbour's
# on this machine, whatever runs (bench/README.md, "What the exec rate can
# resolve").
printf '%-52s %14s\n' "  pairs' range: daemon/off; floor/off" "$(span pair.daemon); $(span pair.floor)"
printf '%-52s %14s  %-18s %s\n' "in-kernel ns/exec, all programs: daemon vs floor" "$d_kns / $f_kns" "<= 1.5x floor" "$(verdict "$d_kns * 2 <= 3 * $f_kns")"
printf '%-52s %14s  %-18s %s\n' "events lost, ${LOSS_SECS}s max storm, --all-processes" "$((l1 - l0))" "0" "$(verdict "$((l1 - l0)) == 0")"
printf '%-52s %14s  %-18s %s\n' "  loss warnings in the daemon's log" "$loss_logged" "0" "$(verdict "$loss_logged == 0")"
printf '%-52s %14s  %-18s %s\n' "daemon peak RSS (VmHWM, all runs)" "$((d_rss / 1024)) MiB" "<= 48 MiB" "$(verdict "$d_rss <= 49152")"
printf '%-52s %14s\n' "  max storm: exec/s, events emitted, us/exec" "$loss_rate, $((e1 - e0)), $loss_cpu"
printf '%-52s %14s\n' "events lost in the rounds (events + daemon + all)" "$lost_rounds"
printf '%-52s %14s\n' "events per storm expected / emitted (median): daemon" "$expected_roots / $(med emitted.daemon)"
printf '%-52s %14s\n' "  daemon --all-processes, tracer events --all-processes" "$expected / $(med emitted.all), $(med emitted.events)"
printf '%-52s %14s\n' "pods tracked by the daemon (live_pods at stop)" "$(med livepods) (of $pods_seen + storm pod)"
printf '%-52s %14s\n' "pods with spans / root spans at the collector" "$pods_exported / $pod_spans of $pods_seen"
printf '%-52s %14s\n' "  (waited after the pods were removed)" "${pods_wait}s"
if [ -n "$IG" ]; then
	ig_cpu=$(med cpu.ig); d_cpu=$(med cpu.daemon)
	printf '%-52s %14s  %-18s %s\n' "ig CPU per exec / daemon CPU per exec" "$(awk -v a="$ig_cpu" -v b="$d_cpu" 'BEGIN {printf "%.1fx", a / b}')" ">= 10x" "$(verdict "$ig_cpu >= 10 * $d_cpu")"
else
	echo "ig: not run (IG unset). Reference from issue 13 (one alternating run on this machine, not this run):"
	echo "    ig trace exec --host 278 us CPU, 29 us in-kernel per exec, 104 MiB; tracer events 30 / 6.6; daemon 41 / 7.9"
fi
