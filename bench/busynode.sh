#!/usr/bin/env bash
# Busy-node benchmark: what the daemon costs a node whose pods are all busy
# the way pods are, and whether one pod flooding signals costs the others
# their events.
#
# Layout (as a kubelet makes it, under a private watched root
# /podchron-bench-<pid> of the cgroup v2 hierarchy), made afresh by
# bench/busynode (Go) for each phase:
#   - PODS (110) quiet pods <root>/burstable/pod<uid>/<container id>, each
#     container's PID 1 forking every FORK_EVERY (2 s) a child that runs
#     /bin/sh -c '/bin/true; exec /bin/sleep 0.1' (2 forks, 3 execs), and an
#     exec readiness probe every PROBE_EVERY (10 s): a process entering the
#     container's cgroup from outside its tree as runc exec does, then
#     /bin/sh -c 'exec /bin/cat /proc/self/status'. Ticks and probes are
#     staggered over their periods;
#   - one noisy pod whose PID 1 sends SIGUSR1 to a child handling it, in a
#     loop, as fast as it can, for the whole phase.
#
# Phases, DURATION (60) seconds each after a 2 s settle, alternated ROUNDS
# times (the order swaps every round):
#   off     no tracer
#   daemon  tracer --no-api --no-runtime on the watched root, metrics on,
#           OTLP to a real OpenTelemetry Collector, at the defaults (as
#           execstorm.sh's daemon mode); started before the pods, stopped
#           after they are gone
#
# Per phase: the workload's own rates (counted by bench/busynode); the
# daemon's CPU (utime+stime, all threads), VmRSS and VmHWM at the end, the
# in-kernel time of its programs (run_time_ns deltas from its program fds'
# fdinfo, kernel.bpf_stats_enabled=1) in total and per program, events
# emitted and lost (podchron_probe_events_total, ..._lost_total), the
# signal records the per-cgroup budget refused (podchron_signals_throttled_total);
# then, with the pods torn down under the daemon, from the spans the
# collector received, per pod: the exec sessions the daemon reported
# (container.exec spans + podchron.sessions.folded.container.exec on the
# container's run) against the probes the workload ran, the pod's
# podchron.events_lost and podchron.signals.throttled.
#
# Exits non-zero on breakage only (the daemon died or did not attach, the
# workload failed, a quiet pod lost events, throttled records or probes),
# never on a speed figure.
#
# Needs root. Usage: bench/busynode.sh [DURATION] [ROUNDS]
# (env: PODS=110 FORK_EVERY=2s PROBE_EVERY=10s KEEP=1)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DURATION=${1:-${DURATION:-60}}
ROUNDS=${2:-${ROUNDS:-2}}
PODS=${PODS:-110}
FORK_EVERY=${FORK_EVERY:-2s}
PROBE_EVERY=${PROBE_EVERY:-10s}
[ "$(id -u)" -eq 0 ] || { echo "busynode: needs root" >&2; exit 1; }
export PATH=$PATH:/usr/local/go/bin

go build -o bin/tracer ./cmd/tracer
go build -o bin/busynode ./bench/busynode
otelcol=$(bash test/otlp/build-collector.sh)

v2=$(bench_v2)
root=/podchron-bench-$$
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
work=$(mktemp -d)
tracer_pid= col_pid= node_pid=
cleanup() {
	# The workload first: it stops its pods and removes their cgroups.
	if [ -n "$node_pid" ]; then kill -TERM "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; fi
	[ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null || true
	[ -n "$col_pid" ] && kill "$col_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	rm_tree "$v2$root"
	if [ "${KEEP:-0}" = 1 ]; then echo "busynode: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
broken=()
broke() { echo "busynode: BROKEN: $*" >&2; broken+=("$*"); }

mkdir -p "$v2$root/burstable"
start_collector "$otelcol"
metrics_port=$(free_port)
hz=$(getconf CLK_TCK)
sysctl -qw kernel.bpf_stats_enabled=1

# Per pod uid, from what the collector printed: "uid exec_spans folded
# events_lost throttled root" (root: 1 if the pod's root span came).
collector_pods() {
	awk '
	/ResourceSpans #/ {uid = ""}
	/^ +-> k8s.pod.uid: Str\(/ {u = $NF; gsub(/^Str\(|\)$/, "", u); if (uid == "") uid = u}
	/^Span #/ {name = ""}
	/^ +Name +: / {name = $NF; if (uid != "") {seen[uid] = 1; if (name == "container.exec") ex[uid]++; if (name == "pod") root[uid] = 1}}
	function val(s) {gsub(/^Int\(|\)$/, "", s); return s + 0}
	uid != "" && /-> podchron\.sessions\.folded\.container\.exec: Int\(/ {fo[uid] += val($NF)}
	uid != "" && /-> podchron\.events_lost: Int\(/ {v = val($NF); if (v > lo[uid]) lo[uid] = v}
	uid != "" && /-> podchron\.signals\.throttled: Int\(/ {v = val($NF); if (v > th[uid]) th[uid] = v}
	END {for (u in seen) printf "%s %d %d %d %d %d\n", u, ex[u], fo[u], lo[u], th[u], root[u]}
	' "$work/collector.log"
}

# One phase: phase <off|daemon> <round>. Appends a line to $work/phases.
phase() {
	local mode=$1 r=$2 tag="$1$2" log="$work/$1$2.tracer.log"
	local k0= k1= l0= l1= e0= e1= th0= th1= rss=- hwm=- cpu=- kns=- progs=-
	if [ "$mode" = daemon ]; then
		start_daemon "$log" --state-dir=
	fi
	bin/busynode node -dir "$v2$root/burstable" -pods "$PODS" -fork-every "$FORK_EVERY" \
		-probe-every "$PROBE_EVERY" -out "$work/$tag.node" 2>"$work/$tag.node.log" &
	node_pid=$!
	wait_log "$work/$tag.node.log" "busynode: ready"
	sleep 2 # the pods' start-up out of the window
	if [ "$mode" = daemon ]; then
		prog_lines "$tracer_pid" >"$work/$tag.prog0"
		k0=$(cpu_ticks "$tracer_pid")
		e0=$(metric podchron_probe_events_total); l0=$(metric podchron_probe_events_lost_total)
		th0=$(metric podchron_signals_throttled_total)
	fi
	local t0 t1
	t0=$(date +%s.%N)
	sleep "$DURATION"
	t1=$(date +%s.%N)
	if [ "$mode" = daemon ]; then
		kill -0 "$tracer_pid" 2>/dev/null || broke "$tag: the daemon died"
		k1=$(cpu_ticks "$tracer_pid")
		prog_lines "$tracer_pid" >"$work/$tag.prog1"
		while read -r id _; do echo "$id $(prog_name "$id")"; done <"$work/$tag.prog1" >"$work/$tag.names"
		sleep 1 # the last events read and counted (the ring buffer is polled every 100 ms)
		e1=$(metric podchron_probe_events_total); l1=$(metric podchron_probe_events_lost_total)
		th1=$(metric podchron_signals_throttled_total)
		rss=$(awk '/^VmRSS/ {print $2}' "/proc/$tracer_pid/status")
		hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$tracer_pid/status")
	fi
	kill -TERM "$node_pid"
	if ! wait "$node_pid"; then broke "$tag: the workload failed (see $work/$tag.node.log)"; fi
	node_pid=
	read -r _ el forks execs probes sigs fails < <(grep '^rates ' "$work/$tag.node")
	[ "$fails" = 0 ] || broke "$tag: $fails probes or ticks failed"
	if [ "$mode" = daemon ]; then
		# The pods are gone: wait (30 s at most) for every pod's root span.
		awk '{print $2}' "$work/$tag.node" | grep -E '^[0-9a-f-]{36}$' >"$work/$tag.uids"
		local want got
		want=$(grep -c . "$work/$tag.uids")
		for _ in $(seq 300); do
			got=$(collector_pods | awk '$6 == 1 {print $1}' | grep -cxFf "$work/$tag.uids" || true)
			[ "$got" -ge "$want" ] && break
			sleep 0.1
		done
		kill -INT "$tracer_pid"; wait "$tracer_pid" || broke "$tag: the daemon exited non-zero"; tracer_pid=
		cpu=$(awk -v a="$k0" -v b="$k1" -v hz="$hz" -v s0="$t0" -v s1="$t1" 'BEGIN {printf "%.2f", (b - a) / hz / (s1 - s0) * 60}')
		# Per program: "name runs/s ns/run ns/s".
		join "$work/$tag.prog0" "$work/$tag.prog1" | join - "$work/$tag.names" | while read -r _ ta ca tb cb name; do
			awk -v n="$name" -v dt="$((tb - ta))" -v dc="$((cb - ca))" -v s0="$t0" -v s1="$t1" \
				'BEGIN {printf "%s %.0f %.0f %.0f\n", n, dc / (s1 - s0), dc ? dt / dc : 0, dt / (s1 - s0)}'
		done | sort -k4,4nr >"$work/$tag.perprog"
		kns=$(awk '{s += $4} END {printf "%.0f", s}' "$work/$tag.perprog")
		progs=$(grep -c . "$work/$tag.perprog")
		# Per pod: what the daemon reported against what the workload did.
		collector_pods >"$work/$tag.collected"
		awk -v tag="$tag" '
		FNR == NR {ex[$1] = $2; fo[$1] = $3; lo[$1] = $4; th[$1] = $5; root[$1] = $6; next}
		$1 == "quiet" {
			q++; probes = $3 + $4; seen = ex[$2] + fo[$2]
			if (seen == probes) qok++; else miss += probes - seen
			qlost += lo[$2]; qth += th[$2]; qroot += root[$2]; qprobes += probes; qseen += seen
		}
		$1 == "noisy" {nlost = lo[$2]; nth = th[$2]; nroot = root[$2]}
		END {printf "%s %d %d %d %d %d %d %d %d %d %d\n", tag, q, qok, qprobes, qseen, qlost, qth, qroot, nlost, nth, nroot}
		' "$work/$tag.collected" "$work/$tag.node" >"$work/$tag.pods"
	fi
	echo "$mode $r $el $forks $execs $probes $sigs $cpu $rss $hwm $kns $progs" \
		"${e0:+$((e1 - e0))} ${l0:+$((l1 - l0))} ${th0:+$((th1 - th0))}" >>"$work/phases"
}

echo "busynode: $PODS quiet pods (a tick every $FORK_EVERY, a probe every $PROBE_EVERY) + 1 signalling pod," \
	"${DURATION}s phases, $ROUNDS rounds, under $root; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then order=(off daemon); else order=(daemon off); fi
	for mode in "${order[@]}"; do
		echo "busynode: round $r, $mode" >&2
		phase "$mode" "$r"
	done
done

# ---- summary
echo
echo "---- busynode: $PODS quiet pods + 1 signalling, ${DURATION}s phases, $ROUNDS rounds, $(nproc) CPUs," \
	"kernel $(uname -r), $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %5s %7s %7s %8s %9s %9s %9s %9s %11s %9s %8s %9s\n' phase round "forks/s" "execs/s" "probes/s" \
	"signals/s" "cpu s/min" "RSS KiB" "HWM KiB" "kern us/s" emitted lost throttled
while read -r mode r _ forks execs probes sigs cpu rss hwm kns _ emitted lost thr; do
	k=-; [ "$kns" != - ] && k=$(awk -v v="$kns" 'BEGIN {printf "%.0f", v / 1000}')
	printf '%-7s %5s %7s %7s %8s %9s %9s %9s %9s %11s %9s %8s %9s\n' "$mode" "$r" "$forks" "$execs" "$probes" \
		"$sigs" "$cpu" "$rss" "$hwm" "$k" "${emitted:--}" "${lost:--}" "${thr:--}"
done <"$work/phases"
echo
d_cpu=$(awk '$1 == "daemon" {print $8 / 60 * 100}' "$work/phases" | median)
d_kern=$(awk '$1 == "daemon" {print $11 / 1e7}' "$work/phases" | median)
sig_ratio=$(awk '{s[$1] = s[$1] " " $7} END {n = split(s["off"], o); split(s["daemon"], d); for (i = 1; i <= n; i++) print d[i] / o[i]}' "$work/phases" | median)
printf 'daemon, medians of the phases: %.1f %% of one core in the process, %.1f %% of one core in its programs;\n' "$d_cpu" "$d_kern"
printf '  the signalling pod'"'"'s rate daemon/off (rounds paired): %.2f\n' "$sig_ratio"
echo "in-kernel time per program (last daemon phase: runs/s, ns/run, us/s):"
last=$(awk '$1 == "daemon" {r = $2} END {print r}' "$work/phases")
awk '{printf "  %-24s %9s %7s %9.1f\n", $1, $2, $3, $4 / 1000}' "$work/daemon$last.perprog"
echo
printf '%-7s %-58s %s\n' phase "quiet pods: probes run / exec sessions reported, pods exact" "lost throttled roots | noisy pod: lost throttled root"
for f in "$work"/daemon*.pods; do
	read -r tag q qok qprobes qseen qlost qth qroot nlost nth nroot <"$f"
	printf '%-7s %-58s %s\n' "$tag" "$qprobes / $qseen, $qok of $q" "$qlost $qth $qroot of $q | $nlost $nth $nroot"
	[ "$qok" = "$q" ] || broke "$tag: $((q - qok)) quiet pods' probes not all reported ($qprobes run, $qseen reported)"
	[ "$qlost" = 0 ] || broke "$tag: quiet pods lost $qlost events (podchron.events_lost)"
	[ "$qth" = 0 ] || broke "$tag: quiet pods' signal records throttled: $qth"
	[ "$qroot" = "$q" ] || broke "$tag: $((q - qroot)) quiet pods' root spans missing"
done
lost_all=$(awk '$1 == "daemon" {s += $14} END {print s + 0}' "$work/phases")
logged=$(cat "$work"/daemon*.tracer.log | grep -c "kernel events lost" || true)
echo "events lost by the ring buffer (all phases): $lost_all; loss warnings in the daemon's log: $logged"
[ "$lost_all" = 0 ] || broke "the ring buffer lost $lost_all events (every pod's, the quiet ones' too)"
[ "$logged" = 0 ] || broke "the daemon logged kernel event losses"
if [ "${#broken[@]}" -gt 0 ]; then
	echo "BROKEN:"; printf '  %s\n' "${broken[@]}"
	exit 1
fi
echo "quiet pods: nothing lost"
