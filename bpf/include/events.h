/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * Events podchron's probes send to user space over the ring buffer.
 *
 * Every event starts with struct event_header, whose first field is the
 * event type. All structs are naturally aligned (no implicit padding), so the
 * Go types bpf2go generates from them (-type) match byte for byte and the
 * decoder can read them without reflection.
 */
#ifndef __PODCHRON_EVENTS_H
#define __PODCHRON_EVENTS_H

#define TASK_COMM_LEN 16
#define FILENAME_LEN 256
#define ARGS_LEN 256
#define CGROUP_PATH_LEN 256

/* A CNI plugin's environment: whole when it fits, else its first and last
 * halves (runtimes append the CNI_* variables to their own environment). */
#define CNI_ENV_LEN 8192
#define CNI_ENV_HALF (CNI_ENV_LEN / 2)

enum event_type {
	EVENT_EXEC = 1,
	EVENT_FORK = 2,
	EVENT_EXIT = 3,
	EVENT_SIGNAL_GENERATE = 4,
	EVENT_SIGNAL_DELIVER = 5,
	EVENT_OOM_KILL = 6,
	EVENT_CGROUP_MKDIR = 7,
	EVENT_CGROUP_RMDIR = 8,
	EVENT_TYPE_MAX = 9,
};

/* Why an event was let through the in-kernel filter (event_header.origin). */
enum event_origin {
	ORIGIN_WATCHED = 1 << 0, /* the task is in a watched cgroup subtree */
	ORIGIN_RUNTIME = 1 << 1, /* a container runtime process (shim, runc, ...) */
	ORIGIN_CNI = 1 << 2,     /* a CNI plugin run */
	ORIGIN_TARGET = 1 << 3,  /* the target (signal, OOM victim) is watched */
};

/* exec_event.flags */
enum exec_flags {
	EXEC_F_CNI = 1 << 0,            /* struct cni_env follows the exec_event */
	EXEC_F_ARGS_TRUNCATED = 1 << 1, /* argv was longer than ARGS_LEN */
};

/* signal_event.disposition: the target's handler for the signal. */
enum signal_disposition {
	DISPOSITION_DEFAULT = 0,
	DISPOSITION_IGNORED = 1,
	DISPOSITION_HANDLER = 2,
};

/* signal_event.target_flags */
enum signal_target_flags {
	SIGNAL_TARGET_NS_INIT = 1 << 0, /* target is PID 1 of its pid namespace (SIGNAL_UNKILLABLE) */
	SIGNAL_SENDER_WATCHED = 1 << 1, /* sender is in a watched cgroup */
	SIGNAL_SENDER_OUTSIDE = 1 << 2, /* sender is a process outside the tracer's pid namespace (its tgid is 0) */
};

/* exit_event.flags */
enum exit_flags {
	EXIT_F_NS_INIT = 1 << 0, /* PID 1 of its pid namespace (a container's init, unless the pod shares one) */
};

/* oom_event.flags */
enum oom_flags {
	OOM_F_VICTIM_KNOWN = 1 << 0, /* victim_* fields were read from the victim task */
	OOM_F_RSS = 1 << 1,          /* rss fields are valid (kernel >= 6.8) */
	OOM_F_MEMCG = 1 << 2,        /* memcg_* were read (CONFIG_MEMCG) */
};

/* Memory cgroups read per OOM kill: the allocating task's own and its
 * ancestors (a pod's container sits at level 4 or 5; deeper trees lose their
 * top levels, which are never a pod's). */
#define OOM_MEMCG_LEVELS 8

struct event_header {
	__u32 type;      /* enum event_type */
	__u32 origin;    /* enum event_origin bits */
	__u64 ktime_ns;  /* CLOCK_BOOTTIME */
	__u64 cgroup_id; /* cgroup of the task the event is about (v2 id, or v1 memory cgroup id) */
	__u32 tgid;
	__u32 pid;
	__u32 ppid;
	__u32 _pad;
	char comm[TASK_COMM_LEN];
};

struct exec_event {
	struct event_header hdr;
	__u32 flags;     /* enum exec_flags */
	__u32 args_size; /* bytes of args captured (NUL-separated argv) */
	char filename[FILENAME_LEN];
	char args[ARGS_LEN];
};

/* cni_env.flags */
enum cni_env_flags {
	CNI_ENV_F_SPLIT = 1 << 0, /* data holds the first and the last CNI_ENV_HALF bytes of a longer environment */
};

/*
 * Appended to an exec_event when EXEC_F_CNI is set (an exec of a binary in a
 * CNI directory): the new program's environment as the kernel laid it out,
 * NUL-separated. User space picks the CNI_* variables out of it; matching
 * them here made the exec program the verifier's most expensive by far.
 */
struct cni_env {
	__u32 size;  /* bytes of data used (CNI_ENV_LEN when split) */
	__u32 flags; /* enum cni_env_flags */
	char data[CNI_ENV_LEN];
};

struct fork_event {
	struct event_header hdr; /* the parent */
	__u32 child_tgid;
	__u32 child_pid;
};

/* Sent once per process, when its last thread exits. */
struct exit_event {
	struct event_header hdr;
	__u32 exit_code; /* wait(2) status: (code << 8) | core << 7 | signal */
	__u32 flags;     /* enum exit_flags */
	__u64 start_ns;  /* CLOCK_BOOTTIME start of the task */
};

struct signal_event {
	struct event_header hdr; /* the sender (current task) */
	__u32 sig;
	__s32 code;   /* si_code: SI_USER 0, SI_KERNEL 0x80, SI_QUEUE -1, SI_TKILL -6, ... */
	__s32 result; /* TRACE_SIGNAL_DELIVERED 0, IGNORED 1, ALREADY_PENDING 2, OVERFLOW_FAIL 3, LOSE_INFO 4 */
	__u32 group;  /* sent to the whole thread group */
	__u32 target_tgid;
	__u32 target_pid;
	__u64 target_cgroup_id;
	char target_comm[TASK_COMM_LEN];
	__u32 disposition;  /* enum signal_disposition at generation time */
	__u32 target_flags; /* enum signal_target_flags */
};

struct signal_deliver_event {
	struct event_header hdr; /* the receiving task */
	__u32 sig;
	__s32 code;
	__u32 disposition; /* enum signal_disposition at delivery */
	__u32 _pad;
	__u64 sa_flags;
};

struct oom_event {
	struct event_header hdr; /* the task in whose context the OOM killer ran */
	__u32 victim_tgid;
	__u32 flags; /* enum oom_flags */
	__u64 victim_cgroup_id;
	char victim_comm[TASK_COMM_LEN];
	__u64 total_vm_kb;
	__u64 anon_rss_kb;
	__u64 file_rss_kb;
	__u64 shmem_rss_kb;
	__s32 oom_score_adj;
	/*
	 * The memory cgroups of the task in whose context the OOM killer ran,
	 * from its own up, with each one's local OOM count (memory.events.local
	 * "oom": times that cgroup's own limit was hit and reclaim failed). The
	 * one whose count just grew is the limit that ran out; none grew for a
	 * node-wide OOM. User space compares with the last counts it saw.
	 */
	__u32 memcg_count;
	__u64 memcg_id[OOM_MEMCG_LEVELS];    /* cgroup id in the memory hierarchy */
	__u64 memcg_oom[OOM_MEMCG_LEVELS];   /* its local OOM count */
	__u32 memcg_level[OOM_MEMCG_LEVELS]; /* its depth (0: the root) */
};

struct cgroup_event {
	struct event_header hdr; /* the task that made or removed the cgroup */
	__u64 id;
	__s32 level;
	__u32 hierarchy_id;
	char path[CGROUP_PATH_LEN];
};

/* Per event type counters (PERCPU_ARRAY, index = enum event_type). */
struct event_counter {
	__u64 emitted;
	__u64 lost; /* ring buffer reserve failures: the event is gone */
};

/*
 * A cgroup's budget for signal records (LRU_HASH, key = cgroup id; see
 * probes/signal.h). tat is the bucket's "theoretical arrival time" (GCRA):
 * the budget is spent up to tat, and a record is refused while tat would
 * run more than the burst ahead of now. Records refused are counted per
 * kind; user space reads the counts and never writes them.
 */
struct signal_budget {
	__u64 tat;              /* bpf_ktime_get_ns() */
	__u64 dropped_generate; /* signal_generate records refused */
	__u64 dropped_deliver;  /* signal_deliver records refused */
};

#endif /* __PODCHRON_EVENTS_H */
