package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// A recreated sandbox (the kubelet's SandboxChanged: the pause container or
// the pod's network namespace was lost). The kubelet kills the containers,
// runs a new sandbox with a new network (new CNI ADDs) and starts the
// containers again. The new sandbox is a span of its own under the root,
// with its CNI runs; the old sandbox's late facts (its stop, its removal,
// its CNI DEL) no longer end the pod.

// resandbox is a sandbox created after the pod's start-up was out.
type resandbox struct {
	id      string
	created time.Time
	cni     []*cniRun
	emitted bool
}

// podSandbox: the pod's sandbox, its CNI runs, and the sandboxes recreated
// after the start-up.
type podSandbox struct {
	sandboxID      string
	sandboxCreated time.Time // the runtime's time, or the pod cgroup's mkdir
	sandboxReady   time.Time
	sandboxStopped time.Time
	sandboxRemoved time.Time

	cniAdd []*cniRun
	cniDel []*cniRun
	// Sandboxes recreated after the start-up, and CNI ADDs waiting for the
	// runtime to name their sandbox.
	resandboxes []*resandbox
	pendingCNI  []*cniRun
}

// sandboxChanged records a pod's new sandbox.
func (c *Correlator) sandboxChanged(p *pod, id string, created time.Time) {
	old := p.sandboxID
	delete(c.bySandbox, old)
	p.sandboxID = id
	c.bySandbox[id] = p
	p.sandboxStopped, p.sandboxRemoved = time.Time{}, time.Time{}
	p.addRootEvent(span.SpanEvent{Name: names.EventSandboxChanged, Time: created,
		Attrs: []span.Attr{span.String(names.SandboxOldID, old), span.String(names.ContainerID, id)}})
	if !p.startupDone {
		return // the start-up's sandbox span covers both
	}
	rs := &resandbox{id: id, created: created}
	// Its CNI ADDs can come before the runtime's poll names the sandbox.
	for _, r := range p.pendingCNI {
		if r.containerID == id {
			rs.cni = append(rs.cni, r)
		}
	}
	p.pendingCNI = nil
	p.resandboxes = append(p.resandboxes, rs)
}

// newSandboxCNI takes a CNI ADD after the start-up: a recreated sandbox's.
func (c *Correlator) newSandboxCNI(p *pod, r *cniRun) {
	for _, rs := range p.resandboxes {
		if rs.id == r.containerID && !rs.emitted {
			rs.cni = append(rs.cni, r)
			return
		}
	}
	if len(p.pendingCNI) < 16 {
		p.pendingCNI = append(p.pendingCNI, r)
	}
}

// emitResandboxes emits the recreated sandboxes whose network is up.
func (c *Correlator) emitResandboxes(p *pod, force bool) {
	for _, rs := range p.resandboxes {
		if rs.emitted || len(rs.cni) == 0 && !force {
			continue
		}
		end := rs.created
		done := true
		for _, r := range rs.cni {
			done = done && r.done
			end = latest(end, r.end)
		}
		if !force && (!done || c.now.Sub(end) < settle) {
			continue
		}
		rs.emitted = true
		id := p.spanID("sandbox/" + rs.id)
		for _, r := range rs.cni {
			if r.done {
				c.emit(p, c.cniSpan(p, r, id))
			}
		}
		c.emit(p, span.Span{SpanID: id, Parent: c.rootID(p), Name: names.SpanPodSandbox, Start: rs.created, End: end, Status: span.StatusOK,
			Attrs: []span.Attr{span.String(names.ContainerID, rs.id), span.Bool(names.SandboxRecreated, true)}})
	}
}
