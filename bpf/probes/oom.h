/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * OOM kills (oom/mark_victim). The classic tracepoint is used because its
 * context is stable: pid exists on every kernel, comm and the memory figures
 * only since 6.8 (read behind bpf_core_field_exists). OOM kills are rare, so
 * every one is reported; ORIGIN_TARGET says the victim is known to be watched.
 *
 * Which limit ran out (the container's, the pod's, the node allocatable's, or
 * none: a node-wide OOM) is read from the memory cgroups themselves: the
 * kernel counts MEMCG_OOM on the cgroup whose limit was hit just before it
 * calls the OOM killer, and that cgroup is an ancestor of the allocating task
 * (current) and of the victim. The tracepoint does not carry it, so the
 * counters of current's memory cgroup and its ancestors are sent, and user
 * space finds the one that grew.
 */
#ifndef __PODCHRON_PROBES_OOM_H
#define __PODCHRON_PROBES_OOM_H

#include "common.h"
#include "task_cgroup.h"

/* Fills e->memcg_* from the current task's memory cgroup upwards. */
static __always_inline void read_memcgs(struct oom_event *e)
{
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	int oom = bpf_core_enum_value(enum memcg_memory_event, MEMCG_OOM);
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct cgroup_subsys_state *css;
	__u64 events, css_off;

	if (!bpf_core_type_exists(struct mem_cgroup) || id < 0 || id >= 12 || oom < 0 || oom >= 8)
		return;
	events = bpf_core_field_offset(struct mem_cgroup, memory_events_local);
	css_off = bpf_core_field_offset(struct mem_cgroup, css);
	css = BPF_CORE_READ(t, cgroups, subsys[id]);
	for (int i = 0; i < OOM_MEMCG_LEVELS; i++) {
		struct cgroup *cg;
		long count = 0;

		if (!css)
			break;
		cg = BPF_CORE_READ(css, cgroup);
		bpf_probe_read_kernel(&count, sizeof(count),
		                      (void *)css - css_off + events + oom * sizeof(atomic_long_t));
		e->memcg_id[i] = cgroup_id(cg);
		e->memcg_level[i] = BPF_CORE_READ(cg, level);
		e->memcg_oom[i] = count;
		e->memcg_count = i + 1;
		css = BPF_CORE_READ(css, parent);
	}
	if (e->memcg_count)
		e->flags |= OOM_F_MEMCG;
}

SEC("tracepoint/oom/mark_victim")
int handle_mark_victim(struct trace_event_raw_mark_victim *ctx)
{
	NOOP_RETURN();
	__u32 victim = BPF_CORE_READ(ctx, pid);
	struct oom_event *e;
	__u64 cgid;

	e = reserve(EVENT_OOM_KILL, sizeof(*e));
	if (!e)
		return 0;
	cgid = current_cgroup_id();
	fill_header(&e->hdr, EVENT_OOM_KILL, 0, cgid);
	e->victim_tgid = victim;
	e->flags = 0;
	e->victim_cgroup_id = 0;
	e->victim_comm[0] = 0;
	e->total_vm_kb = 0;
	e->anon_rss_kb = 0;
	e->file_rss_kb = 0;
	e->shmem_rss_kb = 0;
	e->oom_score_adj = 0;
	e->memcg_count = 0;
	for (int i = 0; i < OOM_MEMCG_LEVELS; i++) {
		e->memcg_id[i] = 0;
		e->memcg_oom[i] = 0;
		e->memcg_level[i] = 0;
	}
	read_memcgs(e);

	/* The victim task, from the OOM killer's SIGKILL just before (see
	 * last_kill): its cgroup and name whichever task the OOM killer runs
	 * in, and its pid in the tracer's namespace (the tracepoint gives the
	 * initial namespace's only; before 6.8 nothing but that pid, 5.10
	 * included). No match (a victim already dying, sent no signal; a
	 * preemption between the two onto another CPU): the victim's pid alone,
	 * 0 in a non-initial namespace. */
	{
		__u32 zero = 0;
		struct kill_target *k = bpf_map_lookup_elem(&last_kill, &zero);

		if (k && k->host_pid == victim) {
			e->victim_tgid = k->ns_pid;
			e->flags |= OOM_F_VICTIM_KNOWN;
			e->victim_cgroup_id = k->cgroup_id;
			__builtin_memcpy(e->victim_comm, k->comm, sizeof(e->victim_comm));
			if (k->watched)
				e->hdr.origin |= ORIGIN_TARGET;
		} else if (cfg_pidns_level) {
			e->victim_tgid = 0;
		}
	}
	/* Most often the task that hit the limit is the victim itself: read it
	 * from the task when the signal did not say. */
	if (!(e->flags & OOM_F_VICTIM_KNOWN) && (__u32)(bpf_get_current_pid_tgid() >> 32) == victim) {
		e->victim_tgid = e->hdr.tgid;
		e->flags |= OOM_F_VICTIM_KNOWN;
		e->victim_cgroup_id = cgid;
		__builtin_memcpy(e->victim_comm, e->hdr.comm, sizeof(e->victim_comm));
		if (current_watched())
			e->hdr.origin |= ORIGIN_TARGET;
	}
	if (bpf_core_field_exists(ctx->anon_rss)) {
		e->flags |= OOM_F_RSS;
		e->total_vm_kb = BPF_CORE_READ(ctx, total_vm);
		e->anon_rss_kb = BPF_CORE_READ(ctx, anon_rss);
		e->file_rss_kb = BPF_CORE_READ(ctx, file_rss);
		e->shmem_rss_kb = BPF_CORE_READ(ctx, shmem_rss);
		e->oom_score_adj = BPF_CORE_READ(ctx, oom_score_adj);
	}
	if (!(e->flags & OOM_F_VICTIM_KNOWN) && bpf_core_field_exists(ctx->__data_loc_comm)) {
		__u32 loc = BPF_CORE_READ(ctx, __data_loc_comm);

		bpf_probe_read_kernel_str(e->victim_comm, sizeof(e->victim_comm), (void *)ctx + (loc & 0xffff));
	}
	submit(e);
	return 0;
}

#endif /* __PODCHRON_PROBES_OOM_H */
