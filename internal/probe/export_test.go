//go:build linux

package probe

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// Programs returns the loaded programs by name, for bpf_stats readers.
func (p *Probes) Programs() map[string]*ebpf.Program {
	return map[string]*ebpf.Program{
		"exec":           p.objs.HandleExec,
		"fork":           p.objs.HandleFork,
		"exit":           p.objs.HandleExit,
		"signal":         p.objs.HandleSignalGenerate,
		"signal_deliver": p.objs.HandleSignalDeliver,
		"oom":            p.objs.HandleMarkVictim,
		"cgroup_mkdir":   p.objs.HandleCgroupMkdir,
		"cgroup_rmdir":   p.objs.HandleCgroupRmdir,
	}
}

// KernelPaths says which kernel-dependent variant of the programs runs on
// this kernel: chosen at load (helpers, tracepoint arguments) or by CO-RE
// relocations against the kernel's BTF, and in the latter case reported by
// the programs themselves the first time they take it.
type KernelPaths struct {
	// AncestorHelper: tracing programs may call
	// bpf_get_current_ancestor_cgroup_id (probed at load; not on 5.10).
	// Without it the current task's cgroup ancestors are walked.
	AncestorHelper bool
	// ExitGroupDead: sched_process_exit passes group_dead (6.16+);
	// otherwise one exit per process comes from a deduplicating map.
	ExitGroupDead bool

	// Taken by the programs since load:
	AncestorIDs  bool // cgroup->ancestor_ids[] read (kernels before 6.0)
	AncestorPtrs bool // cgroup->ancestors[] read (6.0+)
	CurrentWalk  bool // the current task's ancestors walked, for lack of the helper
}

func (k KernelPaths) String() string {
	return fmt.Sprintf("ancestor-helper=%v exit-group-dead=%v taken: ancestor_ids=%v ancestors=%v current-walk=%v",
		k.AncestorHelper, k.ExitGroupDead, k.AncestorIDs, k.AncestorPtrs, k.CurrentWalk)
}

// Paths reports the kernel-dependent variants in use.
func (p *Probes) Paths() (KernelPaths, error) {
	k := KernelPaths{AncestorHelper: p.ancestorHelper, ExitGroupDead: p.groupDead}
	for _, v := range []struct {
		v   *ebpf.Variable
		dst *bool
	}{
		{p.objs.PathAncestorIds, &k.AncestorIDs},
		{p.objs.PathAncestors, &k.AncestorPtrs},
		{p.objs.PathCurrentWalk, &k.CurrentWalk},
	} {
		var b uint8
		if err := v.v.Get(&b); err != nil {
			return k, fmt.Errorf("read %s: %w", v.v, err)
		}
		*v.dst = b != 0
	}
	return k, nil
}
