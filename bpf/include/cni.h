/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * CNI plugin runs. A runtime runs a plugin by exec'ing a binary from a CNI
 * directory with CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME, CNI_NETNS and
 * CNI_ARGS in its environment. Only execs of binaries under a configured CNI
 * directory (an LPM trie lookup) carry their environment, which user space
 * parses: a string-matching loop over the variables here cost the verifier
 * over 400,000 instructions (a second per load, long enough for signals to
 * restart it over and over).
 */
#ifndef __PODCHRON_PROBES_CNI_H
#define __PODCHRON_PROBES_CNI_H

#include "common.h"

/* Whether filename is under a configured CNI directory. */
static __always_inline bool in_cni_dir(const char *filename)
{
	struct prefix_key key = {};

	key.prefixlen = PREFIX_KEY_LEN * 8;
	if (bpf_probe_read_kernel_str(key.data, sizeof(key.data), filename) <= 0)
		return false;
	return bpf_map_lookup_elem(&cni_dirs, &key) != NULL;
}

/*
 * Copies p's environment into c: whole when it fits, else its first and last
 * halves. p is the current task right after exec, so its environment is
 * resident user memory the kernel has just written. A failed read leaves
 * size 0 (user space then reports a CNI directory exec without CNI fields).
 */
static __always_inline void read_env(struct task_struct *p, struct cni_env *c)
{
	struct mm_struct *mm = p->mm;
	unsigned long start = mm->env_start, end = mm->env_end;
	unsigned long len = end - start;

	c->flags = 0;
	c->size = 0;
	if (end <= start)
		return;
	if (len <= CNI_ENV_LEN) {
		if (bpf_probe_read_user(c->data, len, (void *)start) == 0)
			c->size = len;
		return;
	}
	c->flags = CNI_ENV_F_SPLIT;
	if (bpf_probe_read_user(c->data, CNI_ENV_HALF, (void *)start) == 0 &&
	    bpf_probe_read_user(c->data + CNI_ENV_HALF, CNI_ENV_HALF, (void *)(end - CNI_ENV_HALF)) == 0)
		c->size = CNI_ENV_LEN;
}

#endif /* __PODCHRON_PROBES_CNI_H */
