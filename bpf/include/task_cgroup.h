/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Which cgroup a task is in, and whether that cgroup is watched. */
#ifndef __PODCHRON_CGROUP_H
#define __PODCHRON_CGROUP_H

#include "common.h"

/* Before Linux 6.0 a cgroup kept its ancestors' ids, not pointers. */
struct cgroup___ancestor_ids {
	u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/*
 * Which kernel-dependent path the cgroup lookups took, set once to 1 the
 * first time each is taken (a load and a rarely taken store; no atomics,
 * which 5.10 lacks). User space reads them to report, and the tests to
 * prove, which CO-RE fallback this kernel runs.
 */
__u8 path_ancestor_ids = 0; /* cgroup->ancestor_ids[] (before 6.0) */
__u8 path_ancestors = 0;    /* cgroup->ancestors[] pointers (6.0+) */
__u8 path_current_walk = 0; /* the current task's ancestors by walking, without the helper */

#define PATH_TAKEN(v)            \
	do {                     \
		if (!(v))        \
			(v) = 1; \
	} while (0)

/* The cgroup podchron identifies tasks by: the v2 (default hierarchy) cgroup,
 * or on v1-only hosts the memory controller's cgroup. */
static __always_inline struct cgroup *task_cgroup(struct task_struct *t)
{
	if (cfg_cgroup_v1) {
		int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
		struct cgroup_subsys_state *css;

		if (id < 0 || id >= 12)
			return NULL;
		css = BPF_CORE_READ(t, cgroups, subsys[id]);
		return BPF_CORE_READ(css, cgroup);
	}
	return BPF_CORE_READ(t, cgroups, dfl_cgrp);
}

static __always_inline u64 cgroup_id(struct cgroup *cg)
{
	return cg ? BPF_CORE_READ(cg, kn, id) : 0;
}

static __always_inline u64 task_cgroup_id(struct task_struct *t)
{
	return cgroup_id(task_cgroup(t));
}

static __always_inline u64 ancestor_id(struct cgroup *cg, int level)
{
	if (bpf_core_field_exists(struct cgroup___ancestor_ids, ancestor_ids)) {
		struct cgroup___ancestor_ids *old = (void *)cg;

		PATH_TAKEN(path_ancestor_ids);
		return BPF_CORE_READ(old, ancestor_ids[level]);
	}
	PATH_TAKEN(path_ancestors);
	return BPF_CORE_READ(cg, ancestors[level], kn, id);
}

/* True when cg or one of its ancestors is a watched root. */
static __always_inline bool cgroup_watched(struct cgroup *cg)
{
	int level;

	if (!cg)
		return false;
	level = BPF_CORE_READ(cg, level);
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++) {
		u64 id;

		if (i < cfg_min_root_level)
			continue;
		if (i > level || i > cfg_max_root_level)
			break;
		id = ancestor_id(cg, i);
		if (bpf_map_lookup_elem(&watched_cgroups, &id))
			return true;
	}
	return false;
}

/*
 * Direct-load variants for BTF-typed task pointers (tp_btf arguments). Every
 * helper call costs several kernel function returns, which are expensive on
 * CPUs with return-stack mitigations (SRSO "safe RET"); plain loads through
 * BTF pointers cost one instruction each. The hot probes (exec, fork, exit)
 * use these.
 */
static __always_inline struct cgroup *task_cgroup_btf(struct task_struct *t)
{
	if (cfg_cgroup_v1) {
		int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);

		if (id < 0 || id >= 12)
			return NULL;
		return t->cgroups->subsys[id]->cgroup;
	}
	return t->cgroups->dfl_cgrp;
}

static __always_inline u64 cgroup_id_btf(struct cgroup *cg)
{
	return cg ? cg->kn->id : 0;
}

/* The current task's cgroup id. On v2 one helper call does it. */
static __always_inline u64 current_cgroup_id(void)
{
	if (!cfg_cgroup_v1)
		return bpf_get_current_cgroup_id();
	return task_cgroup_id((struct task_struct *)bpf_get_current_task());
}

/* Whether the current task is in a watched subtree. On v2 the ancestor ids
 * come from one helper call per level, with no pointer walking, where the
 * kernel lets tracing programs call it. */
static __always_inline bool current_watched(void)
{
	if (cfg_cgroup_v1)
		return cgroup_watched(task_cgroup((struct task_struct *)bpf_get_current_task()));
	if (!cfg_ancestor_helper) {
		PATH_TAKEN(path_current_walk);
		return cgroup_watched(task_cgroup((struct task_struct *)bpf_get_current_task()));
	}
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++) {
		u64 id;

		if (i < cfg_min_root_level)
			continue;
		if (i > cfg_max_root_level)
			break;
		id = bpf_get_current_ancestor_cgroup_id(i);
		if (!id) /* deeper than the task's own cgroup */
			break;
		if (bpf_map_lookup_elem(&watched_cgroups, &id))
			return true;
	}
	return false;
}

/*
 * Whether cg (a BTF pointer) or an ancestor is a watched root, walking up
 * through each cgroup's own css's parent with plain loads. (The verifier
 * does not let BTF loads index cgroup's flexible ancestors array.) Only the
 * levels roots live at are looked up; the loop unrolls.
 */
static __always_inline bool cgroup_watched_btf(struct cgroup *cg)
{
	struct cgroup_subsys_state *css;
	int level;

	if (!cg)
		return false;
	css = &cg->self;
	level = cg->level;
#pragma unroll
	for (int i = 0; i < MAX_CGROUP_LEVEL; i++) {
		if (level < cfg_min_root_level || !css)
			break;
		if (level <= cfg_max_root_level) {
			u64 id = css->cgroup->kn->id;

			if (bpf_map_lookup_elem(&watched_cgroups, &id))
				return true;
		}
		css = css->parent;
		level--;
	}
	return false;
}

/*
 * cgroup_watched_btf through this CPU's hot cache (h may be NULL): keyed by
 * the cgroup's address and the watched set's generation, read before the
 * walk, so a change made during it leaves a verdict the next call
 * recomputes. Comparing and keeping a kernel address needs CAP_PERFMON's
 * pointer leaks, which tracing programs have anyway.
 */
static __always_inline bool cgroup_watched_cached(struct cgroup *cg, struct hot_cache *h)
{
	__u32 k0 = 0, k1 = 1, gen;
	__u64 *g0 = bpf_map_lookup_elem(&watch_gen, &k0);
	__u64 *g1 = bpf_map_lookup_elem(&watch_gen, &k1);
	bool w;

	if (!cg || !g0 || !g1 || !h)
		return cgroup_watched_btf(cg);
	gen = (__u32)(*g0 + *g1);
	if (h->cgroup == (__u64)cg && h->gen == gen)
		return h->watched;
	w = cgroup_watched_btf(cg);
	h->cgroup = (__u64)cg;
	h->gen = gen;
	h->watched = w;
	return w;
}

/*
 * current_watched through a hot cache entry (h may be NULL) keyed by the
 * current task's cgroup id, cgid (current_cgroup_id()'s), for programs with
 * no BTF pointer to the current task. Ids are never reused; the generation
 * is read before the walk, as in cgroup_watched_cached.
 */
static __always_inline bool current_watched_cached(__u64 cgid, struct hot_cache *h)
{
	__u32 k0 = 0, k1 = 1, gen;
	__u64 *g0 = bpf_map_lookup_elem(&watch_gen, &k0);
	__u64 *g1 = bpf_map_lookup_elem(&watch_gen, &k1);
	bool w;

	if (!cgid || !g0 || !g1 || !h)
		return current_watched();
	gen = (__u32)(*g0 + *g1);
	if (h->cgroup == cgid && h->gen == gen)
		return h->watched;
	w = current_watched();
	h->cgroup = cgid;
	h->gen = gen;
	h->watched = w;
	return w;
}

#endif /* __PODCHRON_CGROUP_H */
