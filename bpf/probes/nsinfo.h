/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * The tracer's own namespaces, as the kernel sees them. Run once by user
 * space before the other programs are loaded (BPF_PROG_TEST_RUN of a raw
 * tracepoint program runs it in the caller's context; Linux 5.10+), never
 * attached. It answers what /proc cannot from inside a namespace:
 *  - the level of the tracer's pid namespace (its inode is also in
 *    /proc/self/ns/pid, which user space checks against), so the hot
 *    programs report pids as the tracer's namespace numbers them;
 *  - where the root of the tracer's cgroup namespace is in the real
 *    hierarchy: cgroup_mkdir/rmdir report paths from the hierarchy's root,
 *    while the tracer's /sys/fs/cgroup and /proc/<pid>/cgroup (and CRI)
 *    show paths from the namespace's root. A namespace's root is invisible
 *    from inside it: its path is read here, one kernfs name per level.
 */
#ifndef __PODCHRON_PROBES_NSINFO_H
#define __PODCHRON_PROBES_NSINFO_H

#include "common.h"

#define NS_CGROUP_LEVELS 16
#define NS_NAME_LEN 64

struct ns_info {
	__u32 pid_level;    /* level of the caller's pid namespace (0: the initial one) */
	__u32 pid_ns_ino;   /* its inode number */
	__u32 cgroup_level; /* level of the caller's cgroup namespace's root cgroup */
	__u32 cgroup_ns_ino;
	__u64 cgroup_id;    /* that root's cgroup id */
	__u32 names_read;   /* names[0..names_read) were read */
	__u32 _pad;
	/* names[i]: the kernfs name of the root's ancestor at level i+1 (the
	 * root itself last); the path is "/" + names joined by "/". */
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
	struct cgroup_namespace *cns;
	struct css_set *cset;
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

	cns = BPF_CORE_READ(t, nsproxy, cgroup_ns);
	if (!cns)
		return 5;
	info->cgroup_ns_ino = BPF_CORE_READ(cns, ns.inum);
	cset = BPF_CORE_READ(cns, root_cset);
	if (subsys < 0) {
		cg = BPF_CORE_READ(cset, dfl_cgrp);
	} else {
		struct cgroup_subsys_state *css;

		if (subsys >= 12)
			return 6;
		css = BPF_CORE_READ(cset, subsys[subsys]);
		cg = BPF_CORE_READ(css, cgroup);
	}
	if (!cg)
		return 7;
	info->cgroup_level = BPF_CORE_READ(cg, level);
	info->cgroup_id = BPF_CORE_READ(cg, kn, id);
	info->names_read = 0;
	for (int i = 0; i < NS_CGROUP_LEVELS; i++) {
		int level = BPF_CORE_READ(cg, level);
		struct cgroup_subsys_state *parent;

		if (level <= 0 || level > NS_CGROUP_LEVELS)
			break;
		bpf_probe_read_kernel_str(info->names[level - 1], NS_NAME_LEN, BPF_CORE_READ(cg, kn, name));
		info->names_read++;
		parent = BPF_CORE_READ(cg, self.parent);
		if (!parent)
			break;
		cg = BPF_CORE_READ(parent, cgroup);
	}
	return 0;
}

#endif /* __PODCHRON_PROBES_NSINFO_H */
