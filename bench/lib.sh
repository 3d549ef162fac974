# Shared by the benchmarks (sourced, not run): execstorm.sh, busynode.sh.
# They set -euo pipefail and $work (a private temporary directory); the
# functions that start the tracer or read its figures use these globals:
#   tracer_pid    the tracer's pid (start_daemon sets it)
#   metrics_port  its metrics endpoint's port
#   col_port      the collector's OTLP/gRPC port (start_collector sets it,
#                 and col_pid)
# shellcheck shell=bash

# v2: the cgroup v2 hierarchy's mount (unified or hybrid).
bench_v2() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then echo /sys/fs/cgroup
	elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then echo /sys/fs/cgroup/unified
	else echo "bench: no cgroup2 mount" >&2; return 1; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rm_tree() { # remove a cgroup tree, deepest first
	[ -d "$1" ] || return 0
	find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null || true
}
uuid() { cat /proc/sys/kernel/random/uuid; }
cid() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# "id run_time_ns run_cnt" of each BPF program a process holds open (its
# program fds; a link's fdinfo names its program too, without run_time_ns:
# skipped), so other tracers' programs are not counted.
prog_lines() {
	local pid=$1
	for f in /proc/"$pid"/fdinfo/*; do
		awk '/^prog_id:/ {id=$2} /^run_time_ns:/ {t=$2} /^run_cnt:/ {c=$2}
		     END {if (id != "" && t != "") print id, t, c}' "$f" 2>/dev/null || true
	done | sort -u -k1,1
}
# Sum of run_time_ns and run_cnt over them, and their number.
prog_stats() { prog_lines "$1" | awk '{t += $2; c += $3; n++} END {printf "%d %d %d\n", t, c, n}'; }
# A program's name, by id.
prog_name() { bpftool prog show id "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])'; }

metric() { # sum of a metric's samples on the daemon's endpoint
	curl -fsS "http://127.0.0.1:$metrics_port/metrics" |
		awk -v m="$1" '{n = $1; sub(/\{.*/, "", n)} n == m {s += $NF} END {printf "%d\n", s}'
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "n/a"}'; }
wait_log() { # file pattern
	for _ in $(seq 300); do grep -q "$2" "$1" && return 0; sleep 0.1; done
	echo "bench: '$2' not seen in $1:" >&2; cat "$1" >&2; return 1
}

# A real OpenTelemetry Collector ($1: its binary, from
# test/otlp/build-collector.sh) printing every span it receives (debug
# exporter, detailed) to $work/collector.log.
start_collector() {
	col_port=$(free_port)
	cat >"$work/otelcol.yaml" <<YAML
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$col_port
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
YAML
	"$1" --config "$work/otelcol.yaml" >"$work/collector.log" 2>&1 &
	col_pid=$!
	for _ in $(seq 300); do grep -q "Everything is ready" "$work/collector.log" && break; sleep 0.1; done
	grep -q "Everything is ready" "$work/collector.log" || { cat "$work/collector.log" >&2; return 1; }
}

# The daemon as users run it, minus the API server and the runtime, on the
# watched root $root, OTLP to the collector, metrics on: start_daemon <log>
# [extra flags]; $TRACER_BIN runs another build than bin/tracer. Returns once
# its probes are attached and its metrics answer.
# DAEMON_SOURCES: the daemon's source flags (default --no-api --no-runtime).
start_daemon() {
	local log=$1
	shift
	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$col_port \
		OTEL_EXPORTER_OTLP_INSECURE=true OTEL_SERVICE_NAME=podchron-bench \
		"${TRACER_BIN:-bin/tracer}" --cgroup-root "$root" ${DAEMON_SOURCES:---no-api --no-runtime} --node-name bench "$@" \
		--metrics-addr "127.0.0.1:$metrics_port" >/dev/null 2>"$log" &
	tracer_pid=$!
	wait_log "$log" "probes attached"
	for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$metrics_port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
}

# PODS pods under $v2$root/burstable, laid out as the kubelet's cgroupfs
# driver does, one container each holding a sleeping process (their pids
# appended to the array sleepers, their uids to $work/pods), and one more,
# empty pod for the storms: its path in storm_pod.
make_sleeping_pods() {
	local u c
	mkdir -p "$v2$root/burstable"
	for _ in $(seq "$PODS"); do
		u=$(uuid)
		c="$v2$root/burstable/pod$u/$(cid)"
		mkdir -p "$c"
		sleep 100000 &
		sleepers+=($!)
		echo $! >"$c/cgroup.procs"
		echo "$u" >>"$work/pods"
	done
	storm_pod="$v2$root/burstable/pod$(uuid)"
	mkdir -p "$storm_pod"
}

# The cleanups' common part: the tracer, the collector and the sleeping
# pods' processes stopped, kernel.bpf_stats_enabled as it was ($old_stats).
stop_bench() {
	[ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null || true
	[ -n "$col_pid" ] && kill "$col_pid" 2>/dev/null || true
	for p in "${sleepers[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
}

# One storm of N execs in a fresh container cgroup of the storm pod: prints
# "n seconds rate". [extra execstorm args] (The cgroups are removed at the
# end, so no rmdir falls into a measurement.)
storm() {
	local c
	c="$storm_pod/$(cid)"
	mkdir "$c"
	bin/execstorm -n "$N" -cgroup "$c" "$@"
}


# The common start of a benchmark on a node of PODS sleeping pods:
# bench_node <name> <collector binary> sets v2, root (/podchron-<name>-<pid>),
# work, sleepers and old_stats, installs the cleanup (stop_bench, the cgroup
# tree and $work removed) as the EXIT trap, makes the pods, starts the
# collector and picks metrics_port.
bench_node() {
	v2=$(bench_v2)
	root=/podchron-$1-$$
	old_stats=$(sysctl -n kernel.bpf_stats_enabled)
	work=$(mktemp -d)
	tracer_pid='' col_pid=''
	sleepers=()
	trap 'stop_bench; rm_tree "$v2$root"; rm -rf "$work"' EXIT
	make_sleeping_pods
	start_collector "$2"
	metrics_port=$(free_port)
}
