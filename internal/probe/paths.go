//go:build linux

package probe

import (
	"errors"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// haveAncestorHelper tells whether tracing programs may call
// bpf_get_current_ancestor_cgroup_id. Any doubt picks the walk, which works
// everywhere.
func haveAncestorHelper() bool {
	err := features.HaveProgramHelper(ebpf.TracePoint, asm.FnGetCurrentAncestorCgroupId)
	return err == nil && !errors.Is(err, ebpf.ErrNotSupported)
}
