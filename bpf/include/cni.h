/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * CNI plugin runs. A runtime runs a plugin by exec'ing a binary from a CNI
 * directory with CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME, CNI_NETNS and
 * CNI_ARGS in its environment. Only execs of binaries under a configured CNI
 * directory (an LPM trie lookup) pay for the environment scan.
 */
#ifndef __PODCHRON_PROBES_CNI_H
#define __PODCHRON_PROBES_CNI_H

#include "common.h"

#define ENV_BUF_LEN 1024

static __always_inline bool starts_with(const char *s, const char *lit, int n)
{
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (i >= n)
			break;
		if (s[i] != lit[i])
			return false;
	}
	return true;
}

static __always_inline bool in_cni_dir(const char *filename)
{
	struct prefix_key key = {};

	key.prefixlen = PREFIX_KEY_LEN * 8;
	if (bpf_probe_read_kernel_str(key.data, sizeof(key.data), filename) <= 0)
		return false;
	return bpf_map_lookup_elem(&cni_dirs, &key) != NULL;
}

/*
 * Returns the CNI fields (in per-CPU scratch space) when p is a CNI plugin
 * run, NULL otherwise. p is the current task, right after exec, so its
 * environment is resident user memory.
 */
static __always_inline struct cni_info *cni_run(struct task_struct *p, const char *filename)
{
	__u32 zero = 0;
	struct scratch *s;
	struct mm_struct *mm;
	unsigned long env, env_end;
	bool found = false, continued = false;

	if (!in_cni_dir(filename))
		return NULL;
	s = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!s)
		return NULL;
	__builtin_memset(&s->cni, 0, sizeof(s->cni));

	mm = BPF_CORE_READ(p, mm);
	env = BPF_CORE_READ(mm, env_start);
	env_end = BPF_CORE_READ(mm, env_end);

	for (int i = 0; i < MAX_ENV_VARS; i++) {
		long n;
		char *b = s->env;

		if (env >= env_end)
			break;
		n = bpf_probe_read_user_str(b, ENV_BUF_LEN, (void *)env);
		if (n <= 0)
			break;
		/* A variable longer than the buffer: skip its tail without matching. */
		if (!continued && starts_with(b, "CNI_", 4)) {
			if (starts_with(b + 4, "COMMAND=", 8)) {
				bpf_probe_read_kernel_str(s->cni.command, sizeof(s->cni.command), b + 12);
				found = true;
			} else if (starts_with(b + 4, "CONTAINERID=", 12)) {
				bpf_probe_read_kernel_str(s->cni.container_id, sizeof(s->cni.container_id), b + 16);
			} else if (starts_with(b + 4, "IFNAME=", 7)) {
				bpf_probe_read_kernel_str(s->cni.ifname, sizeof(s->cni.ifname), b + 11);
			} else if (starts_with(b + 4, "NETNS=", 6)) {
				bpf_probe_read_kernel_str(s->cni.netns, sizeof(s->cni.netns), b + 10);
			} else if (starts_with(b + 4, "ARGS=", 5)) {
				bpf_probe_read_kernel_str(s->cni.args, sizeof(s->cni.args), b + 9);
			}
		}
		if (n == ENV_BUF_LEN) {
			continued = true;
			env += n - 1;
		} else {
			continued = false;
			env += n;
		}
	}
	return found ? &s->cni : NULL;
}

#endif /* __PODCHRON_PROBES_CNI_H */
