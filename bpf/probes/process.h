/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* Process lifecycle: exec (with CNI plugin runs), fork, exit. */
#ifndef __PODCHRON_PROBES_PROCESS_H
#define __PODCHRON_PROBES_PROCESS_H

#include "common.h"
#include "task_cgroup.h"
#include "cni.h"

static __always_inline bool is_runtime_comm(struct task_struct *t)
{
	struct prefix_key key = {};

	key.prefixlen = TASK_COMM_LEN * 8;
	__builtin_memcpy(key.data, t->comm, TASK_COMM_LEN);
	return bpf_map_lookup_elem(&runtime_comms, &key) != NULL;
}

static __always_inline void track(__u32 tgid, __u32 origin)
{
	bpf_map_update_elem(&tracked_tasks, &tgid, &origin, BPF_ANY);
}

/* Whether p is PID 1 of its own (innermost) pid namespace: its pid's last
 * upid, which a BTF load cannot index by a variable level. */
static __always_inline bool ns_init(struct task_struct *p)
{
	struct pid *pid = p->thread_pid;
	struct upid up = {};
	unsigned int level;

	if (!pid)
		return false;
	level = pid->level;
	if (level == 0 || level >= MAX_PID_NS_LEVEL)
		return false;
	if (bpf_probe_read_kernel(&up, sizeof(up),
	                          (void *)((unsigned long)pid + bpf_core_field_offset(struct pid, numbers) +
	                                   level * bpf_core_type_size(struct upid))))
		return false;
	return up.nr == 1;
}

/*
 * Process-tree roots. In a watched cgroup only the processes the lifecycle
 * is made of are reported (unless cfg_all_processes): those that enter the
 * cgroup from outside (a container's init, an exec session: probes, hooks,
 * kubectl exec), PID 1 of a pid namespace, and the runtime's set-up
 * processes until they exec. What a container's own processes fork and exec
 * below them (a shell's commands, a build's compilers) costs the filter
 * only, not a record each.
 *
 * Each program is a small front and a __noinline rest: the front settles
 * the common case, a process below a root, from one proc_cache slot (exec
 * and exit: the process's own mark, below_by_mark; fork: the forker's
 * slot, then the child's mark), in a few cache lines of code on the
 * kernel's stack; the rest (below_by_parent; exec_is_root, fork_is_root
 * and exit_is_root; the record) runs for the others. The same early return
 * costs ~70 ns more in one program of the rest's size than in the small
 * front, on an exec storm's thrashed caches (bench/perprog.sh,
 * handle_fork: 196-210 ns a run against 123-128). The JIT puts a
 * program's one epilogue after its last instruction, and every return
 * jumps there: a front of the common case alone keeps it a line or two
 * from the lines it ran (exec 242 bytes, exit 264, fork 488, from 791,
 * 871 and 658 when the exec's and exit's fronts asked the parent too and
 * the fork's read its forker's slot twice; bench/abstorm.sh, 2026-12-07:
 * 1,322 and 1,381 ns an exec against 1,380 and 1,423, floor 867 and 954).
 * The fronts ask no setting but cfg_noop, and leave is_self() to the
 * rests: 202, 224 and 444 bytes (bench/README.md, "Fronts without the
 * settings").
 */

/* Whether p's parent is in cgroup cg (BTF loads only). */
static __always_inline bool parent_in(struct task_struct *p, struct cgroup *cg)
{
	return task_cgroup_btf(p->real_parent) == cg;
}

/*
 * Whether p and its parent are in one cgroup (the one task_cgroup_btf
 * names), for the hot fronts: their css_set pointers first, which are in
 * the tasks. Tasks of one css_set share every cgroup; comparing the
 * pointers reads no line of the css_set, whose line with dfl_cgrp also
 * holds its refcount and task count, written at every fork and exit of its
 * tasks (an exec storm's, on both CPUs). Two css_sets may still share that
 * cgroup (on a hybrid host the v1 controllers' cgroups differ): their
 * cgroups decide then.
 */
static __always_inline bool with_parent(struct task_struct *p)
{
	struct task_struct *pp = p->real_parent;
	struct css_set *c = p->cgroups, *pc = pp->cgroups;

	return c == pc || task_cgroup_btf(p) == task_cgroup_btf(pp);
}

/* The process's slot in proc_cache (whoever it holds now). */
static __always_inline struct proc_slot *proc_slot(__u32 tgid)
{
	__u32 i = tgid & (PROC_CACHE_SLOTS - 1);

	return bpf_map_lookup_elem(&proc_cache, &i);
}

/* A slot's key: the process's tgid, and its state in the low 2 bits. */
static __always_inline __u64 slot_key(__u32 tgid, __u32 state)
{
	return ((__u64)tgid << 2) | state;
}

/* What proc_cache says of the process tgid: its state (0: known not to be
 * in proc_roots), or -1 when the slot holds another. */
static __always_inline int slot_state(struct proc_slot *s, __u32 tgid)
{
	__u64 k;

	if (!s)
		return -1;
	k = s->key;
	if ((k ^ slot_key(tgid, 0)) > 3)
		return -1;
	return k & 3;
}

static __always_inline int cached_state(__u32 tgid)
{
	return slot_state(proc_slot(tgid), tgid);
}

/* Whether slot s was written while task t was in the css_set it is in now. */
static __always_inline bool made_in(struct proc_slot *s, struct task_struct *t)
{
	return s->cset == (__u64)t->cgroups;
}

/*
 * Whether proc_cache marks the process tgid, task t, ROOT_NONE in
 * the css_set it is in now: the mark's verdict (below a root) still holds
 * when t has not moved since, whoever its parent is now. A move (another
 * cgroup's exec session entering from a privileged pod, a nested runtime's
 * init joining its container's cgroup) lets the parent decide, as for a
 * process with no mark. An orphan reparented to a process outside its
 * cgroup (in a pod sharing its pid namespace, to the pause process) stays
 * below the root it was forked below.
 */
static __always_inline bool marked_none(struct task_struct *t, __u32 tgid)
{
	struct proc_slot *s = proc_slot(tgid);

	return s && slot_state(s, tgid) == ROOT_NONE && made_in(s, t);
}

/* Remembers what the process tgid, task t, is. */
static __always_inline void cache_root(struct task_struct *t, __u32 tgid, __u32 state)
{
	struct proc_slot *s = proc_slot(tgid);

	if (!s)
		return;
	s->key = slot_key(tgid, state);
	s->cset = (__u64)t->cgroups;
}

/*
 * A new process's slot, when the fork program makes no mark for it: a slot
 * still holding its tgid is a former holder's (a tgid is reused once its
 * process is reaped), and is emptied. So every slot that holds a tgid
 * speaks of the process that holds it now (proc_cache).
 */
static __always_inline void forget_slot(__u32 tgid)
{
	struct proc_slot *s = proc_slot(tgid);

	if (s && slot_state(s, tgid) >= 0)
		s->key = 0;
}

/*
 * The process's root state: proc_cache (which may say ROOT_NONE), else
 * proc_roots (ROOT_PENDING, ROOT_EXECD, or 0: not in it).
 */
static __always_inline __u32 root_state(struct task_struct *t, __u32 tgid)
{
	int c = cached_state(tgid);
	__u8 *r;
	__u32 v;

	if (c >= 0)
		return c;
	r = bpf_map_lookup_elem(&proc_roots, &tgid);
	v = r ? *r : 0;
	cache_root(t, tgid, v);
	return v;
}

static __always_inline void set_root(struct task_struct *t, __u32 tgid, __u8 state)
{
	bpf_map_update_elem(&proc_roots, &tgid, &state, BPF_ANY);
	cache_root(t, tgid, state);
}

static __always_inline void drop_root(__u32 tgid)
{
	bpf_map_delete_elem(&proc_roots, &tgid);
	forget_slot(tgid);
}

/*
 * An exec in watched cgroup cg is a root's (and p becomes an exec'd root)
 * when p entered from outside, is a namespace's init (its signal flags are
 * intact until exit_group), or was forked as a root by the runtime's set-up.
 * The program asked below_by_parent first; this is what it could not tell
 * (the parent's slot holds another process, or it is the runtime's
 * set-up): proc_cache, then plain loads, then proc_roots. A ROOT_NONE that
 * reaches here was made in another css_set (below_by_parent trusts the
 * others): a hint, not a verdict; the parent decides now, so a process
 * moved into this cgroup from another one is a root.
 */
static __always_inline bool exec_is_root(struct task_struct *p, __u32 tgid, struct cgroup *cg)
{
	__u32 r = root_state(p, tgid);

	if (r == ROOT_NONE) /* a hint: the parent decides now, as for any other */
		r = 0;
	if (!r && parent_in(p, cg) && !(p->signal->flags & SIGNAL_UNKILLABLE)) {
		cache_root(p, tgid, ROOT_NONE);
		return false; /* below a root */
	}
	if (r != ROOT_EXECD)
		set_root(p, tgid, ROOT_EXECD);
	return true;
}

/*
 * A fork in watched cgroup cg makes a root while the parent is the
 * runtime's set-up: a pending root, or a process that entered the cgroup
 * without exec'ing in it (runc's "runc init").
 */
static __always_inline bool fork_is_root(struct task_struct *parent, __u32 ptgid, struct task_struct *child,
                                         __u32 child_tgid, struct cgroup *cg)
{
	__u32 r = root_state(parent, ptgid);

	if (r == ROOT_NONE) /* a hint: its parent decides now */
		r = 0;
	if (r == ROOT_EXECD)
		return false;
	if (!r && parent_in(parent, cg)) {
		/* The parent is below a root itself (unless a namespace's init
		 * that never exec'd): its children's exec and exit tell so from
		 * its slot (below_by_parent). */
		if (!(parent->signal->flags & SIGNAL_UNKILLABLE))
			cache_root(parent, ptgid, ROOT_NONE);
		return false;
	}
	set_root(child, child_tgid, ROOT_PENDING);
	return true;
}

/*
 * Whether p's pid lives in a deeper pid namespace than its parent's: a
 * namespace's init (or, rarely, a child of a process that setns'd into a
 * child namespace). Plain BTF loads. Unlike SIGNAL_UNKILLABLE, which
 * exit_group clears, this holds at exit.
 */
static __always_inline bool pidns_below_parent(struct task_struct *p)
{
	struct pid *pid = p->thread_pid, *ppid = p->real_parent->thread_pid;

	return pid && ppid && pid->level > ppid->level;
}

/*
 * Whether p (of tgid tgid) is below a root, from
 * proc_cache and the parent: the exec's and the exit's fronts ask its
 * first half (below_by_mark), their rests the second (below_by_parent).
 * - p's own slot says ROOT_NONE, made in the css_set p is in now
 *   (marked_none): its fork found it below a root (the line the fork
 *   wrote, often on another CPU), or its exec did. That holds whoever p's
 *   parent is now: an orphan stays below the root it was forked below.
 *   Never made for a pid namespace's init (the fork, the exec and the
 *   forker's mark all check SIGNAL_UNKILLABLE, which copy_process sets
 *   before the fork's tracepoint and only exit_group clears; a pid's level
 *   never changes), so the exit trusts it too, without the pid levels (two
 *   lines of the kernel's, ~30 ns of the storm's exit: bench/README.md),
 *   nor for a child whose parent is not its forker (CLONE_PARENT:
 *   2026-11-28's CI missed a shared-pid-namespace pod's init when runc's
 *   stage-2 child, so cloned below an exec'd runc init, was marked at its
 *   fork). Asked before any line of the parent's or of the css_set's: it
 *   took ~20 ns off the storm's exec and exit (bench/abstorm.sh,
 *   2026-11-29: 534-571 ns an exec against 558-585 asking the parent's
 *   cgroup first, floor 357-391).
 * - else, with p's parent in p's cgroup, the parent's slot says ROOT_EXECD
 *   or ROOT_NONE made where the parent is now (so p was never forked as a
 *   pending root: a parent moved here without exec'ing is this cgroup's
 *   runtime set-up, whatever it was below before), and p is no pid
 *   namespace's init.
 * Either settles a container's own process (an exec storm's) from the task,
 * its parent (which the kernel has just touched) and a slot, before the
 * cgroup's verdict or any lookup. Both states are only made in a watched
 * cgroup. A process moved to another cgroup since its mark (a nested
 * runtime's init joining its container's cgroup, an exec session entered
 * from a privileged pod) decides as one with no mark: by its parent.
 */
static __always_inline bool below_by_mark(struct task_struct *p, __u32 tgid)
{
	/* No cfg_all_processes check: that mode makes no ROOT_NONE mark
	 * (every cache_root of one is on a path it never takes), so the
	 * mark is false there and the fronts spend no line on the setting. */
	return marked_none(p, tgid);
}

static __always_inline bool below_by_parent(struct task_struct *p, bool at_exit)
{
	struct task_struct *pp = p->real_parent;
	__u32 ptgid;

	if (cfg_all_processes)
		return false;
	if (!with_parent(p))
		return false;
	ptgid = pp->tgid;
	if (cached_state(ptgid) != ROOT_EXECD && !marked_none(pp, ptgid))
		return false;
	if (at_exit)
		return !pidns_below_parent(p);
	return !(p->signal->flags & SIGNAL_UNKILLABLE);
}

/*
 * An exit in watched cgroup cg is a root's when p is in proc_roots, or its
 * parent is outside: roots that exec'd before the tracer started are not in
 * proc_roots, but their parent (the runtime) still tells them. A ROOT_NONE
 * in proc_cache is a hint here too: the parent decides.
 */
static __always_inline bool exit_is_root(struct task_struct *p, __u32 tgid, struct cgroup *cg)
{
	__u32 r = root_state(p, tgid);

	if (r == ROOT_NONE) /* a hint: the parent decides now */
		r = 0;
	if (!r && parent_in(p, cg) && !pidns_below_parent(p))
		return false;
	drop_root(tgid);
	return true;
}

/* The rest of handle_exec: the exec's verdict and its record. */
static __noinline int exec_record(struct task_struct *p, struct linux_binprm *bprm, __u32 tgid)
{
	bool cni = false;
	struct exec_event *e;
	const char *filename;
	struct mm_struct *mm;
	unsigned long arg_start, arg_end, len;
	__u64 cgid;
	__u32 origin = 0;
	/* p is the current task */
	struct cgroup *cg = task_cgroup_btf(p);

	if (cgroup_watched_cached(cg, hot_cache())) {
		if (!cfg_all_processes && !exec_is_root(p, tgid, cg))
			return 0;
		origin |= ORIGIN_WATCHED;
	} else {
		origin |= tracked(tgid);
	}

	filename = bprm->filename;
	if (!(origin & ORIGIN_WATCHED)) {
		cni = in_cni_dir(filename);
		if (cni) {
			origin |= ORIGIN_CNI;
			track(tgid, ORIGIN_CNI);
		} else if (is_runtime_comm(p)) {
			origin |= ORIGIN_RUNTIME;
			track(tgid, ORIGIN_RUNTIME);
		}
	}
	if (!origin || nested_skip(p))
		return 0;

	if (cni)
		e = reserve(EVENT_EXEC, sizeof(*e) + sizeof(struct cni_env));
	else
		e = reserve(EVENT_EXEC, sizeof(*e));
	if (!e)
		return 0;

	cgid = cgroup_id_btf(cg);
	fill_header_btf(&e->hdr, EVENT_EXEC, origin, cgid, p);
	e->flags = 0;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), filename);

	mm = p->mm;
	arg_start = mm->arg_start;
	arg_end = mm->arg_end;
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
		read_env(p, (struct cni_env *)(e + 1));
	}
	submit(e);
	return 0;
}

static __noinline int exec_rest(struct task_struct *p, struct linux_binprm *bprm, __u32 tgid)
{
	/* The tracer itself: asked here, not in the front, as no mark is
	 * ever made for it (every verdict on it would be made in a rest,
	 * after this check). */
	if (is_self(tgid) || below_by_parent(p, false))
		return 0;
	return exec_record(p, bprm, tgid);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	NOOP_RETURN();
	__u32 tgid = p->tgid;

	if (below_by_mark(p, tgid))
		return 0;
	return exec_rest(p, bprm, tgid);
}

/* The rest of handle_fork: the fork's verdict and its record. */
static __noinline int fork_record(struct task_struct *parent, struct task_struct *child, __u32 ptgid, __u32 child_tgid)
{
	__u32 child_pid = child_tgid;
	struct fork_event *e;
	struct cgroup *cg;
	__u32 origin = 0;

	/* The front made no mark for the child: what its slot says of its
	 * tgid is a former holder's. */
	forget_slot(child_tgid);
	/* The tracer itself (asked here, not in the front). */
	if (is_self(ptgid))
		return 0;
	/* parent is the current task */
	cg = task_cgroup_btf(parent);
	if (cgroup_watched_cached(cg, hot_cache())) {
		if (!cfg_all_processes && !fork_is_root(parent, ptgid, child, child_tgid, cg))
			return 0;
		origin |= ORIGIN_WATCHED;
	} else {
		origin |= tracked(ptgid);
	}
	if (!origin || nested_skip(parent))
		return 0;

	e = reserve(EVENT_FORK, sizeof(*e));
	if (!e)
		return 0;
	fill_header_btf(&e->hdr, EVENT_FORK, origin, cgroup_id_btf(cg), parent);
	if (cfg_pidns_level) {
		/* The child is a new process (pid == tgid): one number. */
		child_pid = ns_nr(child->thread_pid);
		child_tgid = child_pid;
	}
	e->child_tgid = child_tgid;
	e->child_pid = child_pid;
	submit(e);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	NOOP_RETURN();
	__u32 child_tgid = child->tgid;
	__u32 ptgid = parent->tgid;

	/* New threads are not new processes. */
	if (child->pid != child_tgid)
		return 0;
	/* An exec'd root or a process below one forks below a root: the
	 * parent's slot alone tells (read far more than written). Neither
	 * state is made with cfg_all_processes (see below_by_mark), nor for
	 * the tracer (its verdicts are made after is_self, in the rests), so
	 * the front asks neither. */
	struct proc_slot *ps = proc_slot(ptgid);
	int st = slot_state(ps, ptgid);

	/* The parent's slot: an exec'd root, or marked_none. */
	if (ps && (st == ROOT_EXECD || (st == ROOT_NONE && made_in(ps, parent)))) {
		/* So is the child, unless it is a new pid namespace's init
		 * (copy_process marks it SIGNAL_UNKILLABLE before this
		 * tracepoint), whose exec decides, or its parent is not the
		 * forker (CLONE_PARENT, as runc's set-up stages clone: the
		 * child's parent is then the forker's, outside), or it was
		 * cloned into another cgroup (clone3's CLONE_INTO_CGROUP:
		 * crun's and runc 1.4+'s exec sessions on cgroup v2): a
		 * css_set other than the forker's, where the mark would hold
		 * (marked_none) and hide the root's exec. */
		struct proc_slot *cs = proc_slot(child_tgid);
		struct css_set *cset = child->cgroups;

		if (!cs)
			return 0;
		if (child->real_parent == parent && cset == parent->cgroups &&
		    !(child->signal->flags & SIGNAL_UNKILLABLE)) {
			cs->key = slot_key(child_tgid, ROOT_NONE);
			cs->cset = (__u64)cset;
		} else if (slot_state(cs, child_tgid) >= 0) {
			cs->key = 0; /* a former holder's (forget_slot) */
		}
		return 0;
	}
	return fork_record(parent, child, ptgid, child_tgid);
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

/* The rest of handle_exit: the exit's verdict and its record. */
static __noinline int exit_record(struct task_struct *p, __u32 tgid)
{
	struct exit_event *e;
	__u32 origin = 0;
	/* p is the current task */
	struct cgroup *cg = task_cgroup_btf(p);

	if (cgroup_watched_cached(cg, hot_cache())) {
		if (!cfg_all_processes && !exit_is_root(p, tgid, cg))
			return 0;
		origin |= ORIGIN_WATCHED;
	} else {
		origin |= tracked(tgid);
	}
	if (!origin)
		return 0;
	if (!cfg_exit_has_group_dead) {
		struct exit_key k = {.tgid = tgid, .start = p->group_leader->start_boottime};
		__u8 one = 1;

		if (bpf_map_update_elem(&exits_seen, &k, &one, BPF_NOEXIST))
			return 0;
	}
	if (origin & (ORIGIN_RUNTIME | ORIGIN_CNI))
		bpf_map_delete_elem(&tracked_tasks, &tgid);
	if (nested_skip(p))
		return 0;

	e = reserve(EVENT_EXIT, sizeof(*e));
	if (!e)
		return 0;
	fill_header_btf(&e->hdr, EVENT_EXIT, origin, cgroup_id_btf(cg), p);
	e->exit_code = p->exit_code;
	e->flags = ns_init(p) ? EXIT_F_NS_INIT : 0;
	e->start_ns = p->group_leader->start_boottime;
	submit(e);
	return 0;
}

static __noinline int exit_rest(struct task_struct *p, __u32 tgid)
{
	/* The tracer itself (see exec_rest). */
	if (is_self(tgid) || below_by_parent(p, true))
		return 0;
	return exit_record(p, tgid);
}

SEC("tp_btf/sched_process_exit")
int handle_exit(u64 *ctx)
{
	NOOP_RETURN();
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u32 tgid = p->tgid;
	bool group_dead;

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
		group_dead = p->signal->live.counter == 0;
	if (!group_dead)
		return 0;
	if (below_by_mark(p, tgid))
		return 0;
	return exit_rest(p, tgid);
}

#endif /* __PODCHRON_PROBES_PROCESS_H */
