/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Process lifecycle: exec (with CNI plugin runs), fork, exit. */
#ifndef __PODTRACE_PROBES_PROCESS_H
#define __PODTRACE_PROBES_PROCESS_H

#include "common.h"
#include "task_cgroup.h"
#include "cni.h"

static __always_inline bool is_runtime_comm(struct task_struct *t)
{
	struct prefix_key key = {};

	key.prefixlen = TASK_COMM_LEN * 8;
	BPF_CORE_READ_STR_INTO(&key.data, t, comm);
	return bpf_map_lookup_elem(&runtime_comms, &key) != NULL;
}

static __always_inline void track(__u32 tgid, __u32 origin)
{
	bpf_map_update_elem(&tracked_tasks, &tgid, &origin, BPF_ANY);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct cni_info *cni = NULL;
	struct exec_event *e;
	const char *filename;
	struct mm_struct *mm;
	unsigned long arg_start, arg_end, len;
	__u64 cgid;
	__u32 origin = 0;

	if (is_self(tgid))
		return 0;

	if (current_watched())
		origin |= ORIGIN_WATCHED;
	origin |= tracked(tgid);

	filename = BPF_CORE_READ(bprm, filename);
	if (!(origin & ORIGIN_WATCHED)) {
		cni = cni_run(p, filename);
		if (cni) {
			origin |= ORIGIN_CNI;
			track(tgid, ORIGIN_CNI);
		} else if (is_runtime_comm(p)) {
			origin |= ORIGIN_RUNTIME;
			track(tgid, ORIGIN_RUNTIME);
		}
	}
	if (!origin)
		return 0;

	if (cni)
		e = reserve(EVENT_EXEC, sizeof(*e) + sizeof(*cni));
	else
		e = reserve(EVENT_EXEC, sizeof(*e));
	if (!e)
		return 0;

	cgid = current_cgroup_id();
	fill_header(&e->hdr, EVENT_EXEC, origin, cgid);
	e->flags = 0;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), filename);

	mm = BPF_CORE_READ(p, mm);
	arg_start = BPF_CORE_READ(mm, arg_start);
	arg_end = BPF_CORE_READ(mm, arg_end);
	len = arg_end - arg_start;
	if (len > ARGS_LEN) {
		len = ARGS_LEN;
		e->flags |= EXEC_F_ARGS_TRUNCATED;
	}
	if (bpf_probe_read_user(e->args, len, (void *)arg_start) < 0)
		len = 0;
	e->args_size = len;

	if (cni) {
		e->flags |= EXEC_F_CNI;
		bpf_probe_read_kernel((void *)(e + 1), sizeof(*cni), cni);
	}
	submit(e);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	__u32 child_pid = BPF_CORE_READ(child, pid);
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	struct fork_event *e;
	__u32 origin = 0;

	/* New threads are not new processes. */
	if (child_pid != child_tgid || is_self(ptgid))
		return 0;

	/* parent is the current task */
	if (current_watched())
		origin |= ORIGIN_WATCHED;
	origin |= tracked(ptgid);
	if (!origin)
		return 0;

	e = reserve(EVENT_FORK, sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_FORK, origin, current_cgroup_id());
	e->child_tgid = child_tgid;
	e->child_pid = child_pid;
	submit(e);
	return 0;
}

/* Processes whose exit was reported, keyed by tgid and the leader's start
 * time (unique even when tgids are reused), for kernels whose
 * sched_process_exit tracepoint does not pass group_dead. */
struct exit_key {
	__u32 tgid;
	__u32 _pad;
	__u64 start;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct exit_key);
	__type(value, __u8);
} exits_seen SEC(".maps");

/* Set by user space when the tracepoint passes group_dead (Linux 6.16+). */
volatile const __u32 cfg_exit_has_group_dead = 0;

SEC("tp_btf/sched_process_exit")
int handle_exit(u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct exit_event *e;
	bool group_dead;
	__u32 origin = 0;

	if (is_self(tgid))
		return 0;
	/*
	 * One event per process, when its last thread exits: the exit code is
	 * the group's by then. Earlier thread exits (the leader's included) would
	 * double the volume for every multi-threaded program and say nothing new.
	 */
	if (cfg_exit_has_group_dead)
		group_dead = (bool)ctx[1];
	else
		/* signal->live was decremented before the tracepoint; another
		 * exiting thread may see 0 too, so exits_seen deduplicates below. */
		group_dead = BPF_CORE_READ(p, signal, live.counter) == 0;
	if (!group_dead)
		return 0;

	/* p is the current task */
	if (current_watched())
		origin |= ORIGIN_WATCHED;
	origin |= tracked(tgid);
	if (!origin)
		return 0;
	if (!cfg_exit_has_group_dead) {
		struct exit_key k = { .tgid = tgid, .start = BPF_CORE_READ(p, group_leader, start_boottime) };
		__u8 one = 1;

		if (bpf_map_update_elem(&exits_seen, &k, &one, BPF_NOEXIST))
			return 0;
	}
	if (origin & (ORIGIN_RUNTIME | ORIGIN_CNI))
		bpf_map_delete_elem(&tracked_tasks, &tgid);

	e = reserve(EVENT_EXIT, sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->hdr, EVENT_EXIT, origin, current_cgroup_id());
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->_pad = 0;
	e->start_ns = BPF_CORE_READ(p, group_leader, start_boottime);
	submit(e);
	return 0;
}

#endif /* __PODTRACE_PROBES_PROCESS_H */
