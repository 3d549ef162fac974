/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Maps, runtime settings and helpers shared by every probe. */
#ifndef __PODCHRON_COMMON_H
#define __PODCHRON_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "events.h"

/*
 * Runtime settings. User space rewrites these in .rodata before the programs
 * are loaded (cilium/ebpf CollectionSpec.Variables), so the verifier sees them
 * as constants and prunes the branches that are off. Every program still
 * loads the ones it tests, so the ones the hot programs (exec, fork, exit,
 * the signals' mask) read come first, together: .rodata is laid out in
 * definition order, and what they read then spans one or two cache lines,
 * not three (a cold line costs tens of ns on an exec storm's thrashed
 * caches). Every setting of the object is defined here, for that order.
 */
/* A cgroup's signal budget (probes/signal.h): 1e9 / rate (0: no budget).
 * Ahead of the hot ones: read on a budgeted signal only. */
volatile const __u64 cfg_signal_interval_ns = 0;
/* Benchmark only (bench/execstorm.sh's "floor" mode): every program returns
 * at once, so the same hooks cost only their attachment. Never set in use. */
volatile const __u32 cfg_noop = 0;
/* The tracer's tgid in the initial pid namespace, 0 in another one (where
 * the programs ask nested_skip() instead): is_self()'s one compare. */
volatile const __u32 cfg_self_host_tgid = 0;
volatile const __u32 cfg_self_tgid = 0; /* the tracer itself (in its own pid namespace): never report it */
volatile const __u32 cfg_cgroup_v1 = 0; /* 0: cgroup v2 ids; 1: v1 memory controller ids */
/* 1: report every process of a watched cgroup; 0: only its process-tree roots
 * (see probes/process.h). */
volatile const __u32 cfg_all_processes = 0;
volatile const __u64 cfg_signal_mask = ~0ULL; /* bit (sig-1) set: report that signal */
/* Set by user space when the sched_process_exit tracepoint passes group_dead
 * (Linux 6.16+). */
volatile const __u32 cfg_exit_has_group_dead = 0;
/*
 * The tracer's own pid namespace, when it is not the initial one (a node
 * inside a container, as kind and minikube make it): its level and its
 * inode (stat /proc/self/ns/pid). Every pid the programs report is then the
 * pid in that namespace, as CRI and the tracer's /proc give them, and 0 for
 * a task outside it. Level 0 (the initial namespace) turns every
 * translation off: the verifier prunes it, so it costs nothing there.
 */
volatile const __u32 cfg_pidns_level = 0;
volatile const __u32 cfg_pidns_ino = 0;
volatile const __u32 cfg_wakeup_events = 0;   /* wake the reader every this many records per CPU (0: every record) */
volatile const __u64 cfg_wakeup_gap_ns = 0;   /* and on a CPU's first record after this long without one */
volatile const __s32 cfg_min_root_level = 0;  /* shallowest and deepest level of a watched root: */
volatile const __s32 cfg_max_root_level = 15; /* only those ancestor levels are looked up */
volatile const __u32 cfg_hierarchy_id = 0;    /* hierarchy whose mkdir/rmdir we report (0 = v2) */
volatile const __s32 cfg_report_level = 1; /* also report mkdir/rmdir at this level or above, so new roots are seen */
/* Set by user space when tracing programs may call
 * bpf_get_current_ancestor_cgroup_id (not on 5.10, for instance); otherwise
 * the current task's ancestors are found by walking its cgroup. */
volatile const __u32 cfg_ancestor_helper = 1;
/* A cgroup's signal budget (probes/signal.h): burst * interval. */
volatile const __u64 cfg_signal_burst_ns = 0;

/* First statement of every program. */
#define NOOP_RETURN()             \
	do {                      \
		if (cfg_noop)     \
			return 0; \
	} while (0)

#define MAX_CGROUP_LEVEL 16

/* signal_struct.flags: PID 1 of a pid namespace (include/linux/sched/signal.h);
 * exit_group() overwrites the flags, so exits use ns_init() instead. */
#define SIGNAL_UNKILLABLE 0x00000040
#define MAX_PID_NS_LEVEL 32

/* Roots of the watched subtrees: cgroup id -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u8);
} watched_cgroups SEC(".maps");

/*
 * Generation of the watched set: [0] raised by the programs (a root watched
 * at its mkdir; any cgroup's rmdir, after which its address may be reused),
 * [1] set by user space after it changes watched_cgroups. A verdict cached
 * under another sum of the two is recomputed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} watch_gen SEC(".maps");

/* Paths of the configured roots (relative to the hierarchy root), so a root
 * created after load is watched from its mkdir on, with no race against user
 * space: path -> 1. */
#define ROOT_PATH_LEN 128
struct root_path {
	char path[ROOT_PATH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct root_path);
	__type(value, __u8);
} root_paths SEC(".maps");

/* Longest-prefix match keys, for CNI plugin directories and runtime comms. */
#define PREFIX_KEY_LEN 64
struct prefix_key {
	__u32 prefixlen; /* in bits */
	__u8 data[PREFIX_KEY_LEN];
};

/* Directories holding CNI plugins, e.g. "/opt/cni/bin/". */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct prefix_key);
	__type(value, __u8);
} cni_dirs SEC(".maps");

/* Comm prefixes of container runtime processes, e.g. "containerd-shim". */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct prefix_key);
	__type(value, __u8);
} runtime_comms SEC(".maps");

/* Processes outside watched cgroups that we follow until they exit
 * (runtime processes, CNI plugins): tgid -> enum event_origin. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} tracked_tasks SEC(".maps");

/* Process-tree roots of watched cgroups (see probes/process.h): tgid ->
 * enum root_state. LRU: a root whose exit was missed ages out. */
enum root_state {
	ROOT_PENDING = 1, /* forked by a process that entered without exec'ing (a runtime's set-up) */
	ROOT_EXECD = 2,   /* exec'd in the cgroup: an init or an exec session */
	/* In proc_cache only: below a root (forked by a process in the
	 * cgroup or by an exec'd root, or exec'd with its parent in the cgroup),
	 * and no pid namespace's init. Its exec and exit are no records. */
	ROOT_NONE = 3,
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} proc_roots SEC(".maps");

/*
 * What the hot programs (exec, fork, exit) know of a process below or at a
 * root, so that deciding a container's own process touches one line of
 * ours and the task's (which the kernel just touched) only. An exec storm's
 * processes thrash the caches between runs: a line the kernel itself just
 * touched (the task, its css_set) costs a few ns, one of ours ~50 ns, a
 * hash lookup more, and the cgroup's kernfs node (its id) ~170 ns
 * (bench/perprog.sh, 2026-11-28).
 *
 * A direct-mapped array by tgid, shared by every CPU: a fork and its
 * child's exec and exit usually run on different CPUs, so a per-CPU cache
 * would miss just there. A slot is keyed by the tgid, with the state (enum
 * root_state, or 0: not in proc_roots) in its low 2 bits: one word, so two
 * CPUs racing on a slot (tgids 1,024 apart) leave one process's key and
 * state, never a mix. A tgid is reused once its process is reaped: every
 * fork marks its child's slot or, when the slot holds the child's tgid,
 * empties it (probes/process.h, forget_slot), so a slot that holds a tgid
 * speaks of the process that holds it now. The key was the leader's start
 * time before (2026-12-07): reading it took the exec, the exit and the
 * fork a task line each that the storm's other CPU may have written last
 * (the start time's line holds nvcsw and the fault counts; the exit read
 * group_leader too, on the line the parent's next fork writes through the
 * children list). Alternated with the build before in 14 rounds of
 * bench/abstorm.sh, lower in 10, by a median of ~70 ns an exec (floor
 * 900-930 ns): inside one build's run-to-run noise, kept as the same
 * decision from fewer lines (bench/README.md, "Slots keyed by tgid").
 * Beside it, the css_set the process was
 * in when the slot was written: a ROOT_NONE mark holds only while the
 * process is still there (probes/process.h, marked_none); a race that
 * pairs one process's key with another's css_set can only make it miss. A
 * miss falls back to proc_roots and the task's parent.
 *
 * 1,024 slots (16 KiB, kmalloc'd: an array map of at most 32 KiB with its
 * header is not vmalloc'd in 4 KiB pages, bpf_map_area_alloc): in four A/B
 * runs on 2026-12-06's and 07's machines (PTI without PCID: the TLB is
 * flushed at every syscall) the exec storm read 0.16-0.24x the floor less
 * than with 8,192 slots (bench/README.md, "The table kmalloc'd"; why is not
 * proven: 2,000 slots, kmalloc'd too, by a modulo, did no better in their
 * one run). A slot taken by a newer tgid (1,024 pids later, node-wide)
 * costs its process's next program a proc_roots lookup and its parent's
 * lines; only an orphan reparented outside its cgroup (to a shared pid
 * namespace's pause) loses its verdict and is then judged by its parent, a
 * root, as it was 8,192 pids later before.
 */
#define PROC_CACHE_SLOTS 1024
struct proc_slot {
	__u64 key;  /* tgid << 2 | state (slot_key) */
	__u64 cset; /* the process's css_set when the slot was written, as a number */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROC_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct proc_slot);
} proc_cache SEC(".maps");

/*
 * Per CPU, the last cgroup the hot programs asked about and whether it is
 * watched, keyed by the cgroup's address (no load through it: its id is in
 * its kernfs node, a cold line) and the watched set's generation. An
 * address is reused only after its cgroup's rmdir, which raises the
 * generation (probes/cgroup.h), so a verdict never outlives its cgroup.
 * Entries: HOT_PROCESS the process programs', HOT_SIGNAL_TARGET the
 * signal's target's, HOT_SIGNAL_RECEIVER the receiver's of a delivery,
 * keyed by the cgroup's id (no BTF pointer to the current task on every
 * kernel); apart, so a pod flooding signals does not evict the processes'
 * verdict.
 */
enum hot_entry { HOT_PROCESS, HOT_SIGNAL_TARGET, HOT_SIGNAL_RECEIVER, HOT_ENTRIES };

struct hot_cache {
	__u64 cgroup;  /* address of the last cgroup asked about */
	__u32 gen;     /* watch_gen[0] + watch_gen[1] when its verdict was made */
	__u32 watched; /* the verdict */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HOT_ENTRIES);
	__type(key, __u32);
	__type(value, struct hot_cache);
} hot SEC(".maps");

static __always_inline struct hot_cache *hot_at(__u32 entry)
{
	return bpf_map_lookup_elem(&hot, &entry);
}

static __always_inline struct hot_cache *hot_cache(void)
{
	return hot_at(HOT_PROCESS);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized from user space before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EVENT_TYPE_MAX);
	__type(key, __u32);
	__type(value, struct event_counter);
} counters SEC(".maps");

static __always_inline void count(__u32 type, bool lost)
{
	struct event_counter *c = bpf_map_lookup_elem(&counters, &type);

	if (!c)
		return;
	if (lost)
		c->lost++;
	else
		c->emitted++;
}

/* Reserve a ring buffer record; a failure is counted, never silent. */
static __always_inline void *reserve(__u32 type, __u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	/* One null check only: older verifiers (6.1) lose track of the
	 * reservation across a second, redundant check and reject the program. */
	if (!e) {
		count(type, true);
		return NULL;
	}
	count(type, false);
	return e;
}

/* Per CPU: records submitted without waking the reader, and when the last
 * record was made (its header's time). */
struct submit_state {
	__u32 quiet;
	__u32 _pad;
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct submit_state);
} quiet_submits SEC(".maps");

/*
 * Submit a record. With cfg_wakeup_events set, the reader is woken only on
 * every cfg_wakeup_events-th record of a CPU, and on a CPU's first record
 * after cfg_wakeup_gap_ns without one; its poll picks up the rest: wakeups
 * cost the reader a syscall each. A per-CPU count (an inlined array lookup)
 * is cheaper than asking the ring buffer how full it is, and the record's
 * own time costs no clock read. The gap's wakeup is what lets the reader
 * poll rarely on a quiet node (internal/probe/source.go): a record it is
 * not woken for comes within the gap after another of its CPU's, which the
 * reader was woken for or found on its frequent poll, so it polls often
 * while records come and rarely once they stop.
 */
static __always_inline void submit(void *e)
{
	__u64 flags = 0;
	__u32 zero = 0;

	if (cfg_wakeup_events) {
		struct submit_state *s = bpf_map_lookup_elem(&quiet_submits, &zero);

		flags = BPF_RB_NO_WAKEUP;
		if (s) {
			__u64 now = ((struct event_header *)e)->ktime_ns;

			if (++s->quiet >= cfg_wakeup_events || now - s->last_ns > cfg_wakeup_gap_ns) {
				s->quiet = 0;
				flags = BPF_RB_FORCE_WAKEUP;
			}
			s->last_ns = now;
		}
	}
	bpf_ringbuf_submit(e, flags);
}

/*
 * The number of pid in the tracer's pid namespace (cfg_pidns_level), or 0
 * when pid is not visible there (a task of the host or of a sibling node).
 * A pid is visible in a namespace when that namespace is one of its
 * numbers[0..level]: the one at the tracer's level must be the tracer's own.
 * bpf_get_ns_current_pid_tgid cannot do this: it answers only for a task
 * whose innermost namespace is the given one, and a pod's processes are one
 * namespace deeper. numbers[] is indexed through bpf_probe_read_kernel, as a
 * BTF load cannot index a flexible array by a runtime value on 5.10.
 */
static __always_inline __u32 ns_nr(struct pid *pid)
{
	struct upid up = {};

	if (!pid || BPF_CORE_READ(pid, level) < cfg_pidns_level)
		return 0;
	if (bpf_probe_read_kernel(&up, sizeof(up),
	                          (void *)((unsigned long)pid + bpf_core_field_offset(struct pid, numbers) +
	                                   cfg_pidns_level * bpf_core_type_size(struct upid))))
		return 0;
	if (!up.ns || BPF_CORE_READ(up.ns, ns.inum) != cfg_pidns_ino)
		return 0;
	return up.nr;
}

/* A task's tgid and pid in the tracer's pid namespace (0: outside it). */
static __always_inline __u32 ns_tgid(struct task_struct *t)
{
	return ns_nr(BPF_CORE_READ(t, group_leader, thread_pid));
}

static __always_inline __u32 ns_pid(struct task_struct *t)
{
	return ns_nr(BPF_CORE_READ(t, thread_pid));
}

/*
 * Per CPU, the last SIGKILL's target task: its pid in the initial namespace
 * and in the tracer's, its cgroup, its name, and whether it is watched. The
 * OOM killer sends its SIGKILL (signal_generate, which has the task) just
 * before oom/mark_victim (which has only the victim task's initial-namespace
 * pid), in the same call on the same CPU: __oom_kill_process() on 5.10 and
 * since. So mark_victim knows the victim's cgroup and name even when the
 * OOM killer runs in another task's context (a small allocation hit the
 * limit; a big process holding memory was picked). Task pids, not tgids, as
 * mark_victim names a task: a group kill (memory.oom.group) names every
 * thread of a process.
 */
struct kill_target {
	__u64 cgroup_id;
	__u32 host_pid;
	__u32 ns_pid;
	__u32 watched;
	char comm[TASK_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kill_target);
} last_kill SEC(".maps");

/* tgid is the host's: in the initial pid namespace, the tracer's own. In
 * another one the tracer knows only its pid there, so the programs ask
 * nested_skip() instead, only for what they are about to report. */
static __always_inline bool is_self(__u32 tgid)
{
	/* 0 in another pid namespace: no task the programs see has tgid 0
	 * (the idle tasks neither exec, fork nor exit, nor take signals). */
	return tgid == cfg_self_host_tgid;
}

/* In a non-initial pid namespace, whether a record about task t is not
 * wanted: t is the tracer itself, or t is outside the tracer's namespace
 * (not a process of this node: another node's runtime on the same host). */
static __always_inline bool nested_skip(struct task_struct *t)
{
	__u32 tgid;

	if (!cfg_pidns_level)
		return false;
	tgid = ns_tgid(t);
	return !tgid || tgid == cfg_self_tgid;
}

static __always_inline __u32 tracked(__u32 tgid)
{
	__u32 *o = bpf_map_lookup_elem(&tracked_tasks, &tgid);

	return o ? *o : 0;
}

/* fill_header for a BTF pointer to the current task (tp_btf arguments):
 * direct loads, no helper calls but the clock. */
static __always_inline void fill_header_btf(struct event_header *h, __u32 type, __u32 origin, __u64 cgid,
                                            struct task_struct *t)
{
	h->type = type;
	h->origin = origin;
	h->ktime_ns = bpf_ktime_get_boot_ns();
	h->cgroup_id = cgid;
	if (cfg_pidns_level) {
		h->tgid = ns_tgid(t);
		h->pid = ns_pid(t);
		h->ppid = ns_tgid(t->real_parent);
	} else {
		h->tgid = t->tgid;
		h->pid = t->pid;
		h->ppid = t->real_parent->tgid;
	}
	h->_pad = 0;
	__builtin_memcpy(h->comm, t->comm, sizeof(h->comm));
}

/* Every event's header describes the current task: the exec'ing, forking or
 * exiting process, a signal's sender or receiver, the OOM killer's context,
 * the task making a cgroup. The current-task helpers are the cheapest way in. */
static __always_inline void fill_header(struct event_header *h, __u32 type, __u32 origin, __u64 cgid)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->type = type;
	h->origin = origin;
	h->ktime_ns = bpf_ktime_get_boot_ns();
	h->cgroup_id = cgid;
	if (cfg_pidns_level) {
		h->tgid = ns_tgid(cur);
		h->pid = ns_pid(cur);
		h->ppid = ns_tgid(BPF_CORE_READ(cur, real_parent));
	} else {
		h->tgid = pid_tgid >> 32;
		h->pid = (__u32)pid_tgid;
		h->ppid = BPF_CORE_READ(cur, real_parent, tgid);
	}
	h->_pad = 0;
	bpf_get_current_comm(&h->comm, sizeof(h->comm));
}

#endif /* __PODCHRON_COMMON_H */
