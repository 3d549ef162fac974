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
// container (kind, minikube) the tracer, containerd and the kubelet share a
// pid and a cgroup namespace of their own: CRI and the tracer's /proc number
// processes in that pid namespace, and cgroup paths start at that cgroup
// namespace's root, while the kernel's tracepoints see the host's pids and
// the hierarchy's real root.
type Namespaces struct {
	// PIDLevel is the depth of the tracer's pid namespace (0: the initial
	// one); PIDNamespace its inode (as in /proc/self/ns/pid).
	PIDLevel     uint32
	PIDNamespace uint32
	// CgroupRoot is the path of the tracer's cgroup namespace's root in the
	// real hierarchy the probes use ("/" in the initial namespace, or when
	// the namespace's root is the hierarchy's); CgroupLevel is its depth.
	CgroupRoot      string
	CgroupLevel     int
	CgroupNamespace uint32
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
// and checks what it read against /proc/self/ns.
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
		return Namespaces{}, fmt.Errorf("run nsinfo (BPF_PROG_TEST_RUN of a raw tracepoint program needs Linux 5.10+): %w", err)
	}
	if ret != 0 {
		return Namespaces{}, fmt.Errorf("nsinfo failed at step %d", ret)
	}
	var info event.PodchronNsInfo
	if err := objs.Out.Lookup(uint32(0), &info); err != nil {
		return Namespaces{}, fmt.Errorf("read nsinfo: %w", err)
	}
	n := Namespaces{PIDLevel: info.PidLevel, PIDNamespace: info.PidNsIno, CgroupLevel: int(info.CgroupLevel),
		CgroupNamespace: info.CgroupNsIno, CgroupRoot: "/"}
	if int(info.NamesRead) != n.CgroupLevel {
		return n, fmt.Errorf("the cgroup namespace's root is at level %d; only %d levels are supported", n.CgroupLevel, len(info.Names))
	}
	var parts []string
	for i := 0; i < n.CgroupLevel; i++ {
		parts = append(parts, cstr(info.Names[i][:]))
	}
	n.CgroupRoot = "/" + strings.Join(parts, "/")

	// What the program read must be this process's namespaces.
	for _, c := range []struct {
		file string
		ino  uint32
	}{{"/proc/self/ns/pid", n.PIDNamespace}, {"/proc/self/ns/cgroup", n.CgroupNamespace}} {
		var st unix.Stat_t
		if err := unix.Stat(c.file, &st); err != nil {
			return n, fmt.Errorf("namespaces: %w", err)
		}
		if uint64(c.ino) != st.Ino {
			return n, fmt.Errorf("nsinfo read namespace inode %d, but %s is %d", c.ino, c.file, st.Ino)
		}
	}
	return n, nil
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
