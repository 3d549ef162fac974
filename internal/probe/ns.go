//go:build linux

package probe

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/internal/probe/event"
)

// Namespaces is where the tracer runs, as the kernel sees it (read by the
// nsinfo program, bpf/probes/nsinfo.h). On a node that is itself a
// container (kind, minikube) the node's processes, the tracer's included,
// share a pid namespace of their own, and the node's cgroupfs starts at its
// cgroup namespace's root: CRI and the tracer's /proc number processes in
// that pid namespace, and cgroup paths start at that root, while the
// kernel's tracepoints see the host's pids and the hierarchy's real root.
type Namespaces struct {
	// PIDLevel is the depth of the tracer's pid namespace (0: the initial
	// one); PIDNamespace its inode (as in /proc/self/ns/pid).
	PIDLevel     uint32
	PIDNamespace uint32
	// CgroupRoot is the real path (from the hierarchy's root) of the cgroup
	// the tracer's cgroupfs mount starts at: "/" on a host, a kind node's
	// cgroup namespace root when the tracer runs on such a node (its pod's
	// hostPath /sys/fs/cgroup is the node's). Not the tracer's own cgroup
	// namespace: containerd gives a pod its own on cgroup v2, while its
	// hostPath mount shows the node's view. CgroupLevel is its depth.
	CgroupRoot  string
	CgroupLevel int
}

// Nested says whether the tracer runs in a pid or cgroup namespace other
// than the host's.
func (n Namespaces) Nested() bool { return n.PIDLevel > 0 || n.CgroupLevel > 0 }

// KernelPath is a cgroup path as the tracer sees it (relative to its
// cgroup namespace's root) as the kernel reports it.
func (n Namespaces) KernelPath(rel string) string {
	return path.Join(n.CgroupRoot, "/"+strings.Trim(rel, "/"))
}

// LocalPath maps a path the kernel reports onto the tracer's cgroup
// namespace; ok is false for a cgroup outside it (not this node's).
func (n Namespaces) LocalPath(kernelPath string) (string, bool) {
	if n.CgroupLevel == 0 {
		return kernelPath, true
	}
	if kernelPath == n.CgroupRoot {
		return "/", true
	}
	rest, ok := strings.CutPrefix(kernelPath, n.CgroupRoot+"/")
	if !ok {
		return "", false
	}
	return "/" + rest, true
}

// ReadNamespaces runs the nsinfo program once in this process's context
// and checks what it read against /proc/self/ns/pid and the cgroupfs mount.
func ReadNamespaces(layout cgroupfs.Layout) (Namespaces, error) {
	spec, err := event.LoadPodchron()
	if err != nil {
		return Namespaces{}, fmt.Errorf("parse embedded BPF object: %w", err)
	}
	return readNamespaces(spec, layout)
}

func readNamespaces(spec *ebpf.CollectionSpec, layout cgroupfs.Layout) (Namespaces, error) {
	var objs struct {
		Prog *ebpf.Program `ebpf:"nsinfo"`
		Out  *ebpf.Map     `ebpf:"nsinfo_out"`
	}
	if err := spec.Copy().LoadAndAssign(&objs, nil); err != nil {
		return Namespaces{}, fmt.Errorf("load nsinfo: %w", verifierError(err))
	}
	defer objs.Prog.Close()
	defer objs.Out.Close()

	subsys := int64(-1)
	if layout.Mode == cgroupfs.ModeV1Memory {
		id, err := memorySubsysID()
		if err != nil {
			return Namespaces{}, err
		}
		subsys = id
	}
	ret, err := objs.Prog.Run(&ebpf.RunOptions{Context: []int64{subsys}})
	if err != nil {
		return Namespaces{}, fmt.Errorf("run nsinfo (BPF_PROG_TEST_RUN of a raw tracepoint program, Linux 5.10+): %w", err)
	}
	if ret != 0 {
		return Namespaces{}, fmt.Errorf("nsinfo failed at step %d", ret)
	}
	var info event.PodchronNsInfo
	if err := objs.Out.Lookup(uint32(0), &info); err != nil {
		return Namespaces{}, fmt.Errorf("read nsinfo: %w", err)
	}
	n := Namespaces{PIDLevel: info.PidLevel, PIDNamespace: info.PidNsIno, CgroupRoot: "/"}

	// What the program read must be this process's pid namespace.
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return n, fmt.Errorf("namespaces: %w", err)
	}
	if uint64(n.PIDNamespace) != st.Ino {
		return n, fmt.Errorf("nsinfo read pid namespace inode %d, but /proc/self/ns/pid is %d", n.PIDNamespace, st.Ino)
	}

	// The cgroupfs mount's root is one of the tracer's own cgroup's
	// ancestors (every process of a node is below the node's root).
	mountID, err := cgroupfs.DirID(layout.Mount())
	if err != nil {
		return n, err
	}
	deepest := min(int(info.CgroupLevel), len(info.Ids)-1)
	for l := 0; l <= deepest; l++ {
		if info.Ids[l] != mountID {
			continue
		}
		parts := make([]string, l)
		for i := range parts {
			parts[i] = cstr(info.Names[i][:])
		}
		n.CgroupRoot, n.CgroupLevel = "/"+strings.Join(parts, "/"), l
		return n, nil
	}
	return n, fmt.Errorf("%w: %s (cgroup %d) is not an ancestor of the tracer's own cgroup %v (level %d)",
		errMountNotAncestor, layout.Mount(), mountID, info.Ids[:deepest+1], info.CgroupLevel)
}

// errMountNotAncestor: the real path of the cgroupfs mount's root is not
// known, so cgroup_mkdir/rmdir paths cannot be mapped onto it.
var errMountNotAncestor = errors.New("the cgroupfs mount's root is not one of the tracer's cgroup's ancestors")

// initialPIDNamespace: this process runs in the initial pid namespace,
// whose inode the kernel fixes (PROC_PID_INIT_INO).
func initialPIDNamespace() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/ns/pid", &st) == nil && st.Ino == 0xEFFFFFFC
}

// memorySubsysID is the kernel's id of the memory controller (enum
// cgroup_subsys_id depends on the kernel's configuration).
func memorySubsysID() (int64, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoBTF, err)
	}
	var e *btf.Enum
	if err := spec.TypeByName("cgroup_subsys_id", &e); err != nil {
		return 0, fmt.Errorf("kernel BTF: %w", err)
	}
	for _, v := range e.Values {
		if v.Name == "memory_cgrp_id" {
			return int64(v.Value), nil
		}
	}
	return 0, errors.New("kernel BTF: no memory_cgrp_id (no memory controller)")
}

func cstr(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}
