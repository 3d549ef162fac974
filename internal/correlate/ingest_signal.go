// Signals from the kernel: who sent what to a container's processes, and
// how the receiver took it.

package correlate

import (
	"strings"
	"syscall"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"
)

// signalUnattributed counts a signal into a watched cgroup (a pod's) that
// no known container holds, by why (see unattributed). Either way the step
// is not in any trace: it must not be lost silently.
func (c *Correlator) signalUnattributed(id uint64) {
	why := c.unattributed(id)
	m := signalMisses[why]
	switch {
	case m == "":
	case why == orphanContainer:
		// The pod's trace is open: it tells the signal it lacks.
		c.missOn(c.pods[c.cgroups[id].ident.PodUID], m, "")
	default:
		c.miss(m)
	}
}

// orphan is why a kernel fact in a watched cgroup has no container to go to.
type orphan int

const (
	// orphanNone: a watched cgroup that is no pod's (a QoS class's, the
	// root's): nothing of a pod is lost there.
	orphanNone orphan = iota
	// orphanAfterEnd: the cgroup's pod had its trace ended already.
	orphanAfterEnd
	// orphanCgroup: the model never saw the cgroup.
	orphanCgroup
	// orphanContainer: a pod's cgroup naming no container the model knows.
	orphanContainer
	nOrphans
)

var (
	signalMisses = [nOrphans]names.Miss{orphanAfterEnd: names.MissSignalAfterTraceEnd,
		orphanCgroup: names.MissSignalUnknownCgroup, orphanContainer: names.MissSignalUnknownContainer}
	// A pod's cgroup naming no container the model knows yet is the
	// runtime's set-up for an exit (see exitUnattributed).
	exitMisses = [nOrphans]names.Miss{orphanAfterEnd: names.MissExitAfterTraceEnd,
		orphanCgroup: names.MissExitUnknownCgroup}
)

// unattributed says why a kernel fact in the watched cgroup id has no
// container to go to.
func (c *Correlator) unattributed(id uint64) orphan {
	ref := c.cgroups[id]
	switch {
	case ref == nil && c.goneCgroup(id):
		return orphanAfterEnd
	case ref == nil:
		return orphanCgroup
	case ref.ident.PodUID == "":
		return orphanNone
	case c.traceEnded(ref.ident.PodUID):
		return orphanAfterEnd
	default:
		return orphanContainer
	}
}

// goneCgroup reports whether id was a container cgroup of a pod whose trace
// ended (its indexes are dropped then; the pod stays in gone for a while).
// Only for signals no container holds, which the kernel's budgets keep rare.
func (c *Correlator) goneCgroup(id uint64) bool {
	for _, p := range c.gone {
		for _, ct := range p.containers {
			if ct.cgroupID == id {
				return true
			}
		}
	}
	return false
}

// containerSignals: signals to a container's processes, kept within their
// cap (bounds.go), and how its init takes each signal.
type containerSignals struct {
	signals       []signalRec
	signalKinds   map[signalKey]bool
	signalsFolded map[signalKey]int
	delivered     map[syscall.Signal]kernel.Disposition
}

func (c *Correlator) signal(e *kernel.SignalEvent) {
	if c.setupSignal(e) {
		return
	}
	kind := c.senderKind(e)
	ct := c.byCgroup(e.TargetCgroupID)
	obs := c.cfg.Observer
	if ct != nil {
		obs = c.observer(ct.pod)
	}
	obs.Signal(kernel.SignalName(e.Signal), string(kind))
	if ct == nil {
		if e.Origin&kernel.OriginTarget != 0 {
			c.signalUnattributed(e.TargetCgroupID)
		}
		return
	}
	rec := signalRec{
		at: e.Time, sig: e.Signal, senderPID: e.TGID, senderComm: e.Comm, senderKind: kind,
		code: e.Code, result: e.Result, disposition: e.Disposition, nsInit: e.TargetNSInit,
		toInit: e.TargetTGID == ct.initPID,
		// The kernel kills what is left in a PID namespace when its init
		// exits: the "sender" is the exiting init itself.
		pidnsTeardown: e.Code == kernel.SIKernel && e.Signal == syscall.SIGKILL && ct.initPID != 0 &&
			e.TGID == ct.initPID && e.TargetTGID != ct.initPID,
	}
	ct.addSignal(rec)
	p := ct.pod
	if p != nil && rec.toInit && kind == names.SenderRuntime && e.Signal != syscall.SIGCHLD && !ct.sandbox && c.cfg.WantEvents != nil {
		// The kubelet acted on the container (a restart, an eviction, a
		// termination): its words on why are Events, which a pod that
		// looked quiet has no window on yet.
		c.cfg.WantEvents(p.uid)
	}
	if p != nil && rec.toInit && kind == names.SenderRuntime && p.terminating.IsZero() && e.Signal != syscall.SIGCHLD {
		if reason, ok := c.stopping(p, ct); ok {
			// No deletion came before it: the runtime's stop signal is
			// where the termination shows (a kubelet-initiated one, or
			// one the API server could not tell us about).
			p.terminating = e.Time
			p.terminationReason = reason
		}
	} else if p != nil && rec.toInit && kind == names.SenderRuntime && !ct.sandbox && stopBeforeDeletion(p, e) {
		p.terminating = e.Time
	}
}

// stopBeforeDeletion tells the runtime's first stop signal after a deletion
// was seen stamped before the deletion: the termination starts at the
// earlier of the two. The deletion's time is the API server's clock mapped
// onto ours (pipeline, internal/clock) with an offset that can be off by
// up to the API's whole second, or unmeasured yet; the stop it caused
// cannot come before it.
func stopBeforeDeletion(p *pod, e *kernel.SignalEvent) bool {
	return e.Signal != syscall.SIGCHLD && !p.deletedAt.IsZero() && p.terminating.Equal(p.deletedAt) && e.Time.Before(p.terminating)
}

// setupSignal tells a signal that is no lifecycle fact: the runtime's
// set-up process signalling (upstream runc 1.5's "runc init" sends SIG33,
// glibc's SIGSETXID, to each of its own threads in setuid/setgid), or a
// process's C library signalling its own threads with the signals it
// reserves (32 and 33: thread cancellation, setxid).
func (c *Correlator) setupSignal(e *kernel.SignalEvent) bool {
	if pr, ok := c.procs[e.TGID]; ok && pr.bootstrap && e.Code != kernel.SIKernel {
		return true
	}
	return e.TGID == e.TargetTGID && (e.Signal == 32 || e.Signal == 33)
}

var runtimeComms = []string{"containerd-shim", "containerd", "runc", "crun", "conmon", "crio", "dockerd", "cri-dockerd"}

func (c *Correlator) senderKind(e *kernel.SignalEvent) names.SenderKind {
	if e.Code == kernel.SIKernel {
		return names.SenderKernel
	}
	if e.SenderOutside {
		// A host's process, when the node is itself a container.
		return names.SenderExternal
	}
	if e.TGID == 0 {
		return names.SenderKernel
	}
	// Where the sender runs comes first: a process in a pod's cgroup is that
	// pod's, whatever its comm (a container may run a binary called runc or
	// kubelet, and the kernel's runtime flag is a comm match). CRI-O's
	// conmon, in the pod's cgroup tree but the runtime's, is the exception.
	target := c.byCgroup(e.TargetCgroupID)
	if ref := c.cgroups[e.CgroupID]; ref != nil && ref.ident.PodUID != "" && !ref.ident.Conmon {
		if target != nil && target.pod != nil && ref.ident.PodUID == target.pod.uid {
			return names.SenderInPod
		}
		return names.SenderExternal
	}
	if e.Origin&kernel.OriginRuntime != 0 {
		return names.SenderRuntime
	}
	for _, r := range runtimeComms {
		if strings.HasPrefix(e.Comm, r) {
			return names.SenderRuntime
		}
	}
	if e.Comm == "kubelet" {
		return names.SenderKubelet
	}
	return names.SenderExternal
}

func (c *Correlator) deliver(e *kernel.SignalDeliverEvent) {
	ct := c.byCgroup(e.CgroupID)
	if ct == nil || e.TGID != ct.initPID {
		return
	}
	if _, ok := ct.delivered[e.Signal]; !ok {
		ct.delivered[e.Signal] = e.Disposition
	}
}
