// The model's state besides the pod (pod.go): containers (one per run),
// their processes, signals, CNI calls, OOM kills (exec sessions are in
// session.go).

package correlate

import (
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/fact/cri"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
	"github.com/podchron/podchron/internal/names"
)

// container is one container (one attempt) of a pod, sandbox included.
// What serves one concern is grouped, each group defined beside the code
// that uses it.
type container struct {
	id           string
	pod          *pod
	name         string
	attempt      uint32
	sandbox      bool
	init         bool   // an init container (not a sidecar)
	image        string // as the runtime was asked for it (the pod spec's)
	runtime      cri.RuntimeVersion
	podName      string
	podNamespace string
	memLimit     int64

	cgroupID   uint64
	cgroupPath string
	cgroupAt   time.Time
	createdAt  time.Time
	startedAt  time.Time // the runtime's StartedAt

	pids map[uint32]struct{} // its live processes (c.procs entries)

	containerInit     // which process is its init (identity.go)
	containerSessions // exec sessions: hooks, probes, kubectl exec (session.go)
	containerSignals  // signals to its processes (ingest_signal.go)
	containerOOM      // OOM kills (oom.go)
	containerProbes   // failed probes (causes.go)
	containerEnd      // its exit and settling (lifecycle.go)
	containerHooks    // preStop reruns, kubelet-run postStart (hooks.go)
}

// putProc records a live process, replacing any earlier one with its PID.
func (c *Correlator) putProc(pr *proc) {
	if old, ok := c.procs[pr.tgid]; ok && old.ctr != nil && old.ctr != pr.ctr {
		delete(old.ctr.pids, pr.tgid)
	}
	c.procs[pr.tgid] = pr
	if pr.ctr != nil {
		pr.ctr.pids[pr.tgid] = struct{}{}
	}
}

// dropProc forgets a process.
func (c *Correlator) dropProc(pid uint32) {
	if pr, ok := c.procs[pid]; ok {
		delete(c.procs, pid)
		if pr.ctr != nil {
			delete(pr.ctr.pids, pid)
		}
	}
}

// oomRec is an OOM kill in a container.
type oomRec struct {
	ev    *kernel.OOMEvent
	scope string
	memcg string
}

// maxOOMEvents caps the OOM kills kept per container run (the rest are
// counted on the span).
const maxOOMEvents = 16

type proc struct {
	tgid    uint32
	ppid    uint32 // as first seen (the start-up scan)
	ctr     *container
	session *session // the exec session it belongs to, nil for the init tree
	// bootstrap: the runtime's own process setting the container up (runc
	// init); it becomes the container's init or an exec session when it
	// execs the real command.
	bootstrap bool
	// execAt and args: its first exec of a real command (not a runtime's
	// bootstrap) and its latest argv.
	execAt time.Time
	args   []string
}

type signalRec struct {
	at          time.Time
	sig         syscall.Signal
	senderPID   uint32
	senderComm  string
	senderKind  names.SenderKind
	code        int32
	result      kernel.SignalResult
	disposition kernel.Disposition
	nsInit      bool
	toInit      bool
	// pidnsTeardown: SIGKILL from the kernel to a leftover process when
	// the namespace's init exited.
	pidnsTeardown bool
}

type cniRun struct {
	pid          uint32
	plugin       string
	command      string
	containerID  string
	ifname       string
	netns        string
	podUID       string
	podNamespace string
	podName      string
	start, end   time.Time
	exitCode     int
	signal       syscall.Signal
	done         bool
}

type cgroupRef struct {
	id      uint64
	path    string
	ident   cgroupid.Identity
	removed bool
}

// container returns (creating) the container with this id.
func (c *Correlator) container(id string, p *pod) *container {
	if ct, ok := c.containers[id]; ok {
		if ct.pod == nil && p != nil {
			ct.pod = p
			p.containers = append(p.containers, ct)
		}
		return ct
	}
	ct := &container{id: id, pod: p, pids: map[uint32]struct{}{},
		containerSessions: containerSessions{sessions: map[uint32]*session{}},
		containerSignals:  containerSignals{delivered: map[syscall.Signal]kernel.Disposition{}}}
	c.containers[id] = ct
	if p != nil {
		p.containers = append(p.containers, ct)
		if p.sandboxID == id {
			ct.sandbox = true
		}
	}
	return ct
}

// byCgroup finds the container a cgroup id belongs to.
func (c *Correlator) byCgroup(id uint64) *container {
	ref := c.cgroups[id]
	if ref == nil || ref.ident.Kind != cgroupid.KindContainer {
		return nil
	}
	return c.containers[ref.ident.ContainerID]
}

func sigNum(n int) syscall.Signal { return syscall.Signal(n) }
