/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Cgroups created and removed: pod and container cgroups appear and vanish here. */
#ifndef __PODCHRON_PROBES_CGROUP_H
#define __PODCHRON_PROBES_CGROUP_H

#include "common.h"
#include "task_cgroup.h"

static __always_inline int cgroup_event(struct cgroup *cgrp, const char *path, __u32 type)
{
	struct cgroup_event *e;
	__u32 origin = 0;
	int level;

	if (BPF_CORE_READ(cgrp, root, hierarchy_id) != cfg_hierarchy_id)
		return 0;
	if (type == EVENT_CGROUP_RMDIR) {
		/* Its address may be another cgroup's soon: no cached verdict
		 * (keyed by address, see hot_cache) may outlive it. */
		__u32 k0 = 0;
		__u64 *g = bpf_map_lookup_elem(&watch_gen, &k0);

		if (g)
			__sync_fetch_and_add(g, 1);
	}
	level = BPF_CORE_READ(cgrp, level);
	if (cgroup_watched(cgrp))
		origin = ORIGIN_WATCHED;
	else if (level > cfg_report_level)
		return 0;
	else if (type == EVENT_CGROUP_MKDIR) {
		/* A configured root being created: watch it at once, before any
		 * cgroup or task appears below it. */
		struct root_path key;
		__u64 id;
		__u8 one = 1;

		__builtin_memset(&key, 0, sizeof(key));
		bpf_probe_read_kernel_str(key.path, sizeof(key.path), path);
		if (bpf_map_lookup_elem(&root_paths, &key)) {
			id = cgroup_id(cgrp);
			bpf_map_update_elem(&watched_cgroups, &id, &one, BPF_ANY);
			__u32 k0 = 0;
			__u64 *g = bpf_map_lookup_elem(&watch_gen, &k0);

			if (g)
				__sync_fetch_and_add(g, 1);
			origin = ORIGIN_WATCHED;
		}
	}

	e = reserve(type, sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->hdr, type, origin, current_cgroup_id());
	e->id = cgroup_id(cgrp);
	e->level = level;
	e->hierarchy_id = cfg_hierarchy_id;
	bpf_probe_read_kernel_str(e->path, sizeof(e->path), path);
	submit(e);
	return 0;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(handle_cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	NOOP_RETURN();
	return cgroup_event(cgrp, path, EVENT_CGROUP_MKDIR);
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(handle_cgroup_rmdir, struct cgroup *cgrp, const char *path)
{
	NOOP_RETURN();
	return cgroup_event(cgrp, path, EVENT_CGROUP_RMDIR);
}

#endif /* __PODCHRON_PROBES_CGROUP_H */
