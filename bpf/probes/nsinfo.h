/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * The tracer's own place, as the kernel sees it. Run once by user space
 * before the other programs are loaded (BPF_PROG_TEST_RUN of a raw
 * tracepoint program runs it in the caller's context; Linux 5.10+), never
 * attached. It answers what /proc cannot from inside a namespace:
 *  - the level of the tracer's pid namespace (its inode is also in
 *    /proc/self/ns/pid, which user space checks against), so that the hot
 *    programs report pids as the tracer's namespace numbers them;
 *  - the real path of the tracer's own cgroup: cgroup_mkdir/rmdir report
 *    paths from the hierarchy's root, while the tracer's cgroupfs mount
 *    (a kind node's, bind-mounted into the tracer's pod) starts at a cgroup
 *    namespace's root, which is invisible from inside. That root is an
 *    ancestor of the tracer's cgroup: user space finds it among ids[] by the
 *    mount's inode and takes its path from names[].
 */
#ifndef __PODCHRON_PROBES_NSINFO_H
#define __PODCHRON_PROBES_NSINFO_H

#include "common.h"

#define NS_CGROUP_LEVELS 16
#define NS_IDS 32       /* ids[]: levels 0..NS_CGROUP_LEVELS, a power of two for the mask */
#define NS_NAME_LEN 256 /* a kernfs name is at most NAME_MAX bytes */

struct ns_info {
	__u32 pid_level;    /* level of the caller's pid namespace (0: the initial one) */
	__u32 pid_ns_ino;   /* its inode number */
	__u32 cgroup_level; /* level of the caller's own cgroup */
	__u32 _pad;
	/* ids[l]: the cgroup id of its ancestor at level l (the root's at 0,
	 * its own at cgroup_level), for levels up to NS_CGROUP_LEVELS;
	 * names[l-1]: that ancestor's kernfs name. */
	__u64 ids[NS_IDS];
	char names[NS_CGROUP_LEVELS][NS_NAME_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ns_info);
} nsinfo_out SEC(".maps");

/* ctx[0]: the v1 controller id whose hierarchy to describe, or -1 for the
 * default (v2) hierarchy. */
SEC("raw_tp")
int nsinfo(u64 *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__s64 subsys = (__s64)ctx[0];
	struct cgroup *cg;
	struct upid up = {};
	struct pid *pid;
	__u32 zero = 0;
	struct ns_info *info = bpf_map_lookup_elem(&nsinfo_out, &zero);

	if (!info)
		return 1;
	pid = BPF_CORE_READ(t, thread_pid);
	if (!pid)
		return 2;
	info->pid_level = BPF_CORE_READ(pid, level);
	if (info->pid_level >= MAX_PID_NS_LEVEL)
		return 3;
	if (bpf_probe_read_kernel(&up, sizeof(up),
	                          (void *)((unsigned long)pid + bpf_core_field_offset(struct pid, numbers) +
	                                   info->pid_level * bpf_core_type_size(struct upid))))
		return 4;
	info->pid_ns_ino = BPF_CORE_READ(up.ns, ns.inum);

	if (subsys < 0) {
		cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
	} else {
		struct cgroup_subsys_state *css;

		if (subsys >= 12)
			return 5;
		css = BPF_CORE_READ(t, cgroups, subsys[subsys]);
		cg = BPF_CORE_READ(css, cgroup);
	}
	if (!cg)
		return 6;
	info->cgroup_level = BPF_CORE_READ(cg, level);
	/* Up to the root; a cgroup deeper than NS_CGROUP_LEVELS is walked
	 * through, its deepest levels not recorded. */
	for (int i = 0; i < 2 * NS_CGROUP_LEVELS; i++) {
		int level = BPF_CORE_READ(cg, level);
		struct cgroup_subsys_state *parent;

		if (level >= 0 && level <= NS_CGROUP_LEVELS) {
			/* The verifiers of 5.10 and 6.1 lose the range check's
			 * bounds on the computed offsets ("R1 unbounded memory
			 * access"): mask the indexes, behind a barrier so that
			 * clang cannot drop masks the range makes redundant. */
			__u32 li = level, ni = level - 1;

			asm volatile("" : "+r"(li), "+r"(ni));
			info->ids[li & (NS_IDS - 1)] = BPF_CORE_READ(cg, kn, id);
			if (level > 0)
				bpf_probe_read_kernel_str(info->names[ni & (NS_CGROUP_LEVELS - 1)], NS_NAME_LEN,
				                          BPF_CORE_READ(cg, kn, name));
		}
		parent = BPF_CORE_READ(cg, self.parent);
		if (!parent || level <= 0)
			break;
		cg = BPF_CORE_READ(parent, cgroup);
	}
	return 0;
}

#endif /* __PODCHRON_PROBES_NSINFO_H */
