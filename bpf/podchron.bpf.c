// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * podchron's kernel probes: one object, one ring buffer, the programs split
 * by area under probes/. Shared types and maps live in include/.
 */
#include "common.h"
#include "task_cgroup.h"
#include "probes/process.h"
#include "probes/signal.h"
#include "probes/oom.h"
#include "probes/cgroup.h"
#include "probes/nsinfo.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep every event type in the object's BTF, so bpf2go -type can generate Go
 * types for them (types only used by inlined code would not be emitted). */
const struct event_header *_event_header __attribute__((unused));
const struct exec_event *_exec_event __attribute__((unused));
const struct cni_env *_cni_env __attribute__((unused));
const enum cni_env_flags *_cni_env_flags __attribute__((unused));
const struct fork_event *_fork_event __attribute__((unused));
const struct exit_event *_exit_event __attribute__((unused));
const struct signal_event *_signal_event __attribute__((unused));
const struct signal_deliver_event *_signal_deliver_event __attribute__((unused));
const struct oom_event *_oom_event __attribute__((unused));
const struct cgroup_event *_cgroup_event __attribute__((unused));
const enum event_type *_event_type __attribute__((unused));
const enum event_origin *_event_origin __attribute__((unused));
const enum exec_flags *_exec_flags __attribute__((unused));
const enum signal_disposition *_signal_disposition __attribute__((unused));
const enum signal_target_flags *_signal_target_flags __attribute__((unused));
const enum exit_flags *_exit_flags __attribute__((unused));
const enum oom_flags *_oom_flags __attribute__((unused));
const struct ns_info *_ns_info __attribute__((unused));
