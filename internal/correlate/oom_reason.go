// The kubelet's word on an OOM kill, against the kernel's.
//
// The kubelet's reason for a container's end (the status's
// lastState.terminated.reason, which kube-state-metrics exports and most
// OOM alerts read) is its runtime's. containerd says OOMKilled only when it
// caught the cgroup's OOM event, and it can miss it: it then says Error,
// with exit code 137 (containerd/containerd#12260; seen in the kubelet
// guest test under the systemd driver, test/vm/README.md). The kernel's
// oom_kill of the container's init is the fact the run's cause rests on;
// when the kubelet's reason arrives and says otherwise, the trace tells
// both (an event on the root, the root's verdict) and a metric counts it,
// so an SRE sees the OOM kills that alerts on the kubelet's reason miss.

package correlate

import (
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// misreportedOOM tells, once per run, a container whose init the kernel
// OOM-killed and whose end the kubelet (or its runtime) reported with
// another reason. It is called when the run's span is emitted and again
// when a reason arrives after it: the runtime's, or the API status's. A
// run with no reason yet is not judged; one the kernel did not see killed
// is not either (the runtime's OOMKilled then is the cause, causes.go).
func (c *Correlator) misreportedOOM(ct *container) {
	p := ct.pod
	if p == nil || !ct.finalized || ct.oom == nil || ct.oomReasonTold || p.ephemeral(ct.name) {
		return
	}
	r := p.lastTerminatedReason(ct)
	if r == "" || r == cri.ReasonOOMKilled {
		return
	}
	ct.oomReasonTold = true
	p.addRootEvent(span.SpanEvent{Name: names.EventOOMMisreported, Time: ct.exitAt, Attrs: []span.Attr{
		span.String(names.K8sContainerName, ct.name), span.String(names.ContainerID, ct.id),
		span.String(names.K8sContainerStatusLastTerminatedReason, r),
		span.Int(names.OOMVictimPID, int64(ct.oom.VictimTGID)), span.String(names.OOMScope, ct.oomScope)}})
	if p.verdict.misreported == nil {
		p.verdict.misreported = map[string]string{}
	}
	p.verdict.misreported[ct.name] = r
	c.observer(p).OOMKillMisreported(p.namespace(), r)
}

// misreportedOOMs judges the pod's finished runs again: the API status
// may have brought a reason.
func (c *Correlator) misreportedOOMs(p *pod) {
	for _, ct := range p.containers {
		c.misreportedOOM(ct)
	}
}
