/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * Minimal kernel type definitions for podchron's CO-RE probes.
 *
 * Only the fields the probes read are declared. Every struct carries
 * preserve_access_index, so field offsets are relocated against the running
 * kernel's BTF at load time: the layout here does not have to match any
 * particular kernel. Renamed fields get a "___flavor" twin (see cgroup.h).
 */
#ifndef __PODCHRON_VMLINUX_H
#define __PODCHRON_VMLINUX_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;
typedef unsigned int uid_t;
typedef _Bool bool;
#define true 1
#define false 0

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_LPM_TRIE = 11,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_F_NO_PREALLOC = 1,
};

enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};

enum {
	BPF_RB_AVAIL_DATA = 0,
};

typedef struct {
	int counter;
} atomic_t;

struct kernfs_node {
	u64 id;
	const char *name;
} __attribute__((preserve_access_index));

struct cgroup_root {
	int hierarchy_id;
} __attribute__((preserve_access_index));

struct cgroup;

struct cgroup_subsys_state {
	struct cgroup *cgroup;
	struct cgroup_subsys_state *parent;
} __attribute__((preserve_access_index));

struct cgroup {
	struct cgroup_subsys_state self;
	int level;
	struct kernfs_node *kn;
	struct cgroup_root *root;
	struct cgroup *ancestors[];
} __attribute__((preserve_access_index));

enum cgroup_subsys_id {
	memory_cgrp_id = 4,
};

struct css_set {
	struct cgroup_subsys_state *subsys[12];
	struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

/* The memory controller's per-cgroup state: only the OOM counters are read
 * (memory.events.local, kernel >= 5.2). */
enum memcg_memory_event {
	MEMCG_OOM = 3,
};

typedef struct {
	long counter;
} atomic_long_t;

struct mem_cgroup {
	struct cgroup_subsys_state css;
	atomic_long_t memory_events_local[8];
} __attribute__((preserve_access_index));

struct signal_struct {
	atomic_t live;
	int group_exit_code;
	unsigned int flags;
} __attribute__((preserve_access_index));

typedef void (*__sighandler_t)(int);

struct sigaction {
	__sighandler_t sa_handler;
	unsigned long sa_flags;
} __attribute__((preserve_access_index));

struct k_sigaction {
	struct sigaction sa;
} __attribute__((preserve_access_index));

struct sighand_struct {
	struct k_sigaction action[64];
} __attribute__((preserve_access_index));

struct kernel_siginfo {
	int si_signo;
	int si_errno;
	int si_code;
} __attribute__((preserve_access_index));

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
	unsigned long env_start;
	unsigned long env_end;
} __attribute__((preserve_access_index));

struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct pid_namespace {
	unsigned int level;
	struct ns_common ns;
} __attribute__((preserve_access_index));

struct upid {
	int nr;
	struct pid_namespace *ns;
} __attribute__((preserve_access_index));

struct pid {
	unsigned int level;
	struct upid numbers[];
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int exit_code;
	pid_t pid;
	pid_t tgid;
	u64 start_boottime;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	char comm[16];
	struct signal_struct *signal;
	struct sighand_struct *sighand;
	struct mm_struct *mm;
	struct css_set *cgroups;
	struct pid *thread_pid;
	struct nsproxy *nsproxy;
} __attribute__((preserve_access_index));

struct cgroup_namespace {
	struct ns_common ns;
	struct css_set *root_cset;
} __attribute__((preserve_access_index));

struct nsproxy {
	struct cgroup_namespace *cgroup_ns;
} __attribute__((preserve_access_index));

struct linux_binprm {
	const char *filename;
} __attribute__((preserve_access_index));

struct trace_entry {
	unsigned short type;
	unsigned char flags;
	unsigned char preempt_count;
	int pid;
} __attribute__((preserve_access_index));

/* Context of the classic oom/mark_victim tracepoint. Only pid exists on every
 * kernel; comm and the memory figures were added in 6.8, so each is read
 * behind bpf_core_field_exists(). */
struct trace_event_raw_mark_victim {
	struct trace_entry ent;
	int pid;
	u32 __data_loc_comm;
	unsigned long total_vm;
	unsigned long anon_rss;
	unsigned long file_rss;
	unsigned long shmem_rss;
	uid_t uid;
	unsigned long pgtables;
	short oom_score_adj;
	char __data[0];
} __attribute__((preserve_access_index));

#endif /* __PODCHRON_VMLINUX_H */
