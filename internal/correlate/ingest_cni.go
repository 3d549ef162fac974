// CNI plugin runs, from the kernel's exec and exit of the plugin binaries:
// which pod's sandbox they configure, and when they returned.

package correlate

import (
	"path/filepath"

	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
)

func (c *Correlator) cniExec(e *kernel.ExecEvent) {
	r := &cniRun{
		pid:          e.TGID,
		plugin:       filepath.Base(e.Filename),
		command:      e.CNI.Command,
		containerID:  e.CNI.ContainerID,
		ifname:       e.CNI.IfName,
		netns:        e.CNI.NetNS,
		podUID:       e.CNI.PodUID,
		podNamespace: e.CNI.PodNamespace,
		podName:      e.CNI.PodName,
		start:        e.Time,
	}
	c.cni[e.TGID] = r
	// A CNI run names the pod's sandbox: the container whose network it sets up.
	if p := c.cniPod(r); p != nil && r.containerID != "" && p.sandboxID == "" {
		p.sandboxID = r.containerID
		c.bySandbox[r.containerID] = p
		if ct, ok := c.containers[r.containerID]; ok {
			ct.sandbox = true
		}
	}
}

func (c *Correlator) cniPod(r *cniRun) *pod {
	if r.podUID != "" {
		if c.traceEnded(r.podUID) {
			return nil // after the trace's end: cniDone counts it, once
		}
		return c.pod(r.podUID, r.start, names.MissCNIAfterTraceEnd)
	}
	if p, ok := c.bySandbox[r.containerID]; ok {
		return p
	}
	return nil
}

func (c *Correlator) cniDone(r *cniRun, e *kernel.ExitEvent) {
	r.end = e.Time
	r.exitCode = e.ExitCode
	r.signal = e.Signal
	r.done = true
	result := "ok"
	if r.exitCode != 0 || r.signal != 0 {
		result = "error"
	}
	if r.podUID != "" && c.traceEnded(r.podUID) {
		// After the trace's end (ended.go), however late (while the
		// finished pod is kept, with its filter; after, with its tombstone
		// only): measured and counted as one miss, not added outside its
		// root.
		c.observer(c.gone[r.podUID]).CNICall(r.plugin, r.command, result, r.end.Sub(r.start))
		c.miss(names.MissCNIAfterTraceEnd)
		return
	}
	p := c.cniPod(r)
	c.observer(p).CNICall(r.plugin, r.command, result, r.end.Sub(r.start))
	if p == nil {
		c.miss(names.MissCNIUnknownPod)
		return
	}
	switch r.command {
	case "ADD":
		if p.startupDone {
			c.newSandboxCNI(p, r)
			break
		}
		p.cniAdd = append(p.cniAdd, r)
		if r.end.After(p.sandboxReady) {
			p.sandboxReady = r.end
		}
	case "DEL":
		p.cniDel = append(p.cniDel, r)
		c.note(change{kind: changeCNIDone, p: p, r: r})
	default:
		p.cniAdd = append(p.cniAdd, r)
	}
	c.podSeen(p) // a finished ADD names the namespace without the API server or runtime
}
