/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Signals: generated (who sent what to whom, and what became of it) and
 * delivered (what the receiver's disposition was). */
#ifndef __PODCHRON_PROBES_SIGNAL_H
#define __PODCHRON_PROBES_SIGNAL_H

#include "common.h"
#include "task_cgroup.h"

#define SI_USER 0
#define SI_KERNEL 0x80
#define NSIG 64
#define SIGKILL 9

/*
 * A budget per cgroup for signal records, so one pod flooding signals
 * (kill(self, SIGUSR1) with the signal ignored runs at ~0.7 M/s a thread)
 * cannot fill the node's one ring buffer and cost every other pod its
 * events. In the way of Tetragon's per-cgroup rate limit, but a token bucket
 * kept as GCRA (one timestamp, no division in the kernel): each record moves
 * the cgroup's tat ("theoretical arrival time") on by cfg_signal_interval_ns
 * (1 s / rate); a record that would put tat more than cfg_signal_burst_ns
 * (burst * interval) ahead of now is refused and counted on the cgroup
 * (struct signal_budget), never reserved. The cgroup charged is the one
 * whose task made the record: the sender's for signal_generate, the
 * receiver's for signal_deliver (a container's cgroup, so each container of
 * a pod has its own budget). Only tasks in watched cgroups are charged: a
 * signal sent from outside the pods (the runtime's SIGTERM, the kubelet, an
 * operator) is always reported as sent (its delivery is the receiver's, and
 * charged to it), and SIGKILL is never charged (its target dies, it cannot
 * flood). The budget is looked up only after the cheap
 * filters pass, so signals that are not records cost nothing more.
 * Concurrent records of one cgroup on several CPUs may race on tat (a few
 * records more or fewer); the drop counts are atomic, so every signal is
 * either a record or counted.
 */
/* cfg_signal_interval_ns and cfg_signal_burst_ns are in common.h. */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct signal_budget);
} signal_budgets SEC(".maps");

/* Whether cgroup cgid may make one more signal record; counts a refusal. */
static __always_inline bool signal_budget(__u64 cgid, bool deliver)
{
	struct signal_budget *b;
	__u64 now, tat;

	if (!cfg_signal_interval_ns)
		return true;
	now = bpf_ktime_get_ns();
	b = bpf_map_lookup_elem(&signal_budgets, &cgid);
	if (!b) {
		struct signal_budget fresh = {.tat = now + cfg_signal_interval_ns};

		/* Another CPU may have made it meanwhile: one record more. */
		bpf_map_update_elem(&signal_budgets, &cgid, &fresh, BPF_NOEXIST);
		return true;
	}
	tat = b->tat > now ? b->tat : now;
	tat += cfg_signal_interval_ns;
	if (tat - now > cfg_signal_burst_ns) {
		if (deliver)
			__sync_fetch_and_add(&b->dropped_deliver, 1);
		else
			__sync_fetch_and_add(&b->dropped_generate, 1);
		return false;
	}
	b->tat = tat;
	return true;
}

/* One unsigned compare and a shift: sig 0 wraps to a bit past NSIG. */
static __always_inline bool signal_wanted(int sig)
{
	__u32 bit = (__u32)sig - 1;

	if (bit >= NSIG)
		return false;
	return (cfg_signal_mask >> bit) & 1;
}

static __always_inline __u32 disposition(unsigned long handler)
{
	if (handler == 0) /* SIG_DFL */
		return DISPOSITION_DEFAULT;
	if (handler == 1) /* SIG_IGN */
		return DISPOSITION_IGNORED;
	return DISPOSITION_HANDLER;
}

/* The handler task t has installed for sig (1..64). */
static __always_inline unsigned long sig_handler(struct task_struct *t, int sig)
{
	struct sighand_struct *sh = BPF_CORE_READ(t, sighand);
	unsigned long handler = 0;
	__u64 off;

	if (!sh || sig < 1 || sig > NSIG)
		return 0;
	off = bpf_core_field_offset(struct sighand_struct, action) +
	      (__u64)(sig - 1) * bpf_core_type_size(struct k_sigaction) +
	      bpf_core_field_offset(struct k_sigaction, sa.sa_handler);
	bpf_probe_read_kernel(&handler, sizeof(handler), (void *)sh + off);
	return handler;
}

/* The rest of handle_signal_generate, for a signal the mask wants. */
static __noinline int signal_generate_record(int sig, struct kernel_siginfo *info, struct task_struct *task, int group,
                                             int result)
{
	struct signal_event *e;
	struct cgroup *tcg;
	__u32 origin = 0, tflags = 0, ttgid;
	bool target_watched, sender_watched;
	__u64 cgid;

	/* task is a BTF pointer (tp_btf): plain loads, and the target's
	 * verdict through this CPU's signal entry of the hot cache (a pod
	 * flooding signals asks about one cgroup again and again). */
	ttgid = task->tgid;
	tcg = task_cgroup_btf(task);
	target_watched = cgroup_watched_cached(tcg, hot_at(HOT_SIGNAL_TARGET));
	if (target_watched)
		origin |= ORIGIN_TARGET;
	if (sig == SIGKILL) {
		/* For an OOM kill's mark_victim, next on this CPU (see last_kill). */
		__u32 zero = 0;
		struct kill_target *k = bpf_map_lookup_elem(&last_kill, &zero);

		if (k) {
			k->host_pid = task->pid;
			k->ns_pid = cfg_pidns_level ? ns_pid(task) : k->host_pid;
			k->cgroup_id = cgroup_id_btf(tcg);
			k->watched = origin & ORIGIN_TARGET;
			BPF_CORE_READ_STR_INTO(&k->comm, task, comm);
		}
	}
	if (is_self(ttgid))
		return 0;
	origin |= tracked(ttgid);
	/* A target outside the tracer's pid namespace is not this node's; a
	 * sender outside it is reported with pid 0. */
	if (!origin || nested_skip(task))
		return 0;

	cgid = current_cgroup_id();
	/* A sender in its target's cgroup (a process signalling itself or
	 * its container's others, as a flood does) has the target's verdict. */
	sender_watched = cgid == cgroup_id_btf(tcg) ? target_watched : current_watched();
	if (sender_watched) {
		/* A pod's task sent it: its container pays. */
		if (sig != SIGKILL && !signal_budget(cgid, false))
			return 0;
		tflags |= SIGNAL_SENDER_WATCHED;
	}
	if (task->signal->flags & SIGNAL_UNKILLABLE)
		tflags |= SIGNAL_TARGET_NS_INIT;

	e = reserve(EVENT_SIGNAL_GENERATE, sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_SIGNAL_GENERATE, origin, cgid);
	/* A sender with no number in the tracer's pid namespace is a host's
	 * process (not the kernel's idle task, whose host tgid is 0 too). */
	if (cfg_pidns_level && !e->hdr.tgid && (bpf_get_current_pid_tgid() >> 32))
		tflags |= SIGNAL_SENDER_OUTSIDE;
	e->sig = sig;
	/* SEND_SIG_NOINFO (0) and SEND_SIG_PRIV (1) are not real pointers. */
	if ((unsigned long)info == 0)
		e->code = SI_USER;
	else if ((unsigned long)info == 1)
		e->code = SI_KERNEL;
	else
		e->code = BPF_CORE_READ(info, si_code);
	e->result = result;
	e->group = group;
	if (cfg_pidns_level) {
		e->target_tgid = ns_tgid(task);
		e->target_pid = ns_pid(task);
	} else {
		e->target_tgid = ttgid;
		e->target_pid = task->pid;
	}
	e->target_cgroup_id = cgroup_id_btf(tcg);
	BPF_CORE_READ_STR_INTO(&e->target_comm, task, comm);
	e->disposition = disposition(sig_handler(task, sig));
	e->target_flags = tflags;
	submit(e);
	return 0;
}

/*
 * The fronts take the raw context, not BPF_PROG's arguments, and read the
 * rest of it only for a wanted signal: SIGCHLD, with every process's exit,
 * stops after one load and the mask, in a small program (the rest is a
 * function). (With BPF_PROG's five loads first, the storm's in-kernel time
 * per exec was 590 and 599 ns against 555 here and 562-565 for the build
 * before: bench/abstorm.sh, 2026-11-29.)
 */
SEC("tp_btf/signal_generate")
int handle_signal_generate(u64 *ctx)
{
	NOOP_RETURN();
	int sig = (int)ctx[0];

	if (!signal_wanted(sig))
		return 0;
	/* (int sig, struct kernel_siginfo *info, struct task_struct *task, int group, int result) */
	return signal_generate_record(sig, (struct kernel_siginfo *)ctx[1], (struct task_struct *)ctx[2], (int)ctx[3],
	                              (int)ctx[4]);
}

/* The rest of handle_signal_deliver, for a signal the mask wants. */
static __noinline int signal_deliver_record(int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	struct signal_deliver_event *e;
	__u32 origin = 0, tgid;
	__u64 cgid;

	tgid = bpf_get_current_pid_tgid() >> 32;
	if (is_self(tgid))
		return 0;
	/* SIGKILL without siginfo is the kernel tearing down the other threads of
	 * an exiting group (exit_group, or a fatal signal already reported when it
	 * was generated): not news. */
	if (sig == 9 && !info)
		return 0;
	cgid = current_cgroup_id();
	if (current_watched_cached(cgid, hot_at(HOT_SIGNAL_RECEIVER)))
		origin |= ORIGIN_WATCHED;
	origin |= tracked(tgid);
	if (!origin || nested_skip((struct task_struct *)bpf_get_current_task()))
		return 0;
	/* A pod's task receives it: its container pays. */
	if ((origin & ORIGIN_WATCHED) && sig != SIGKILL && !signal_budget(cgid, true))
		return 0;

	e = reserve(EVENT_SIGNAL_DELIVER, sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_SIGNAL_DELIVER, origin, cgid);
	e->sig = sig;
	e->code = info ? BPF_CORE_READ(info, si_code) : 0;
	e->disposition = disposition((unsigned long)BPF_CORE_READ(ka, sa.sa_handler));
	e->_pad = 0;
	e->sa_flags = BPF_CORE_READ(ka, sa.sa_flags);
	submit(e);
	return 0;
}

SEC("tp_btf/signal_deliver")
int handle_signal_deliver(u64 *ctx)
{
	NOOP_RETURN();
	int sig = (int)ctx[0];

	if (!signal_wanted(sig))
		return 0;
	/* (int sig, struct kernel_siginfo *info, struct k_sigaction *ka) */
	return signal_deliver_record(sig, (struct kernel_siginfo *)ctx[1], (struct k_sigaction *)ctx[2]);
}

#endif /* __PODCHRON_PROBES_SIGNAL_H */
