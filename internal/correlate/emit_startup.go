// Spans of a pod's start-up: pod.startup and its children (sandbox, CNI,
// image pulls, init containers, container starts).

package correlate

import (
	"fmt"
	"time"

	"github.com/podchron/podchron/internal/probe"
)

// emitStartup ends the start-up at end: Ready, or (out.failure set) the
// moment the model gave up on it. It emits the phase's spans.
func (c *Correlator) emitStartup(p *pod, end time.Time, out startupOutcome) {
	ready := end
	p.startupDone = true
	p.readyAt = ready
	p.readyEvidence = nil
	if !p.observedFrom.IsZero() && ready.Before(p.observedFrom) {
		return // started before the tracer: an earlier instance reported it
	}
	start := p.startupStart()
	id := c.startupID(p)
	// Scheduling.
	if sched, ok := p.condition("PodScheduled"); ok && p.info != nil {
		c.emit(p, Span{SpanID: p.spanID("scheduling"), Parent: id, Name: "pod.scheduling", Start: p.info.CreatedAt, End: sched, Status: StatusOK})
	}
	// The sandbox and its network.
	if !p.sandboxCreated.IsZero() {
		sbID := p.spanID("sandbox")
		end := latest(p.sandboxCreated, p.sandboxReady)
		for _, ct := range p.containers {
			if ct.sandbox && ct.initExec.After(end) {
				end = ct.initExec
			}
		}
		var sattrs []Attr
		if p.sandboxID != "" {
			sattrs = append(sattrs, String("container.id", p.sandboxID))
		}
		for _, r := range p.cniAdd {
			if r.done {
				c.emit(p, c.cniSpan(p, r, sbID))
			}
		}
		c.emit(p, Span{SpanID: sbID, Parent: id, Name: "pod.sandbox", Start: p.sandboxCreated, End: end, Status: StatusOK, Attrs: sattrs})
	}
	// Image pulls.
	for _, name := range sortedKeys(p.pulls) {
		pl := p.pulls[name]
		if pl.start.IsZero() || pl.end.IsZero() && pl.failedAt.IsZero() {
			continue
		}
		c.emit(p, c.pullSpan(p, pl, id))
	}
	// Each app container's start: created -> its init process runs.
	for _, ct := range p.containers {
		if ct.sandbox || ct.init {
			continue
		}
		s := earliest(ct.createdAt, ct.cgroupAt)
		e := latest(ct.startedAt, ct.initExec)
		if s.IsZero() || e.IsZero() {
			continue
		}
		attrs := containerAttrs(ct)
		if len(ct.initArgs) > 0 {
			attrs = append(attrs, Strings("process.command_args", ct.initArgs...), Int("process.pid", int64(ct.initPID)))
		}
		c.emit(p, Span{SpanID: p.spanID(ctKey("start", ct)), Parent: id, Name: "container.start", Start: s, End: e, Status: StatusOK, Attrs: attrs})
	}
	attrs := []Attr{String("podchron.owner.kind", p.ownerKind())}
	status, msg := StatusOK, ""
	if out.failure != "" {
		status, msg = StatusError, out.failure
		attrs = append(attrs, String("podchron.startup.outcome", out.outcome))
		if out.container != "" {
			attrs = append(attrs, String("k8s.container.name", out.container))
		}
		if out.reason != "" {
			attrs = append(attrs, String("podchron.waiting.reason", out.reason))
		}
	} else {
		if out.outcome != "" {
			attrs = append(attrs, String("podchron.startup.outcome", out.outcome))
		}
		c.cfg.Observer.PodStartup(p.namespace(), p.ownerKind(), ready.Sub(start))
	}
	c.emit(p, Span{SpanID: id, Parent: c.rootID(p), Name: "pod.startup", Start: start, End: ready, Status: status,
		StatusMessage: msg, Attrs: attrs})
}

func (c *Correlator) cniSpan(p *pod, r *cniRun, parent SpanID) Span {
	attrs := []Attr{String("podchron.cni.plugin", r.plugin), String("podchron.cni.command", r.command),
		String("container.id", r.containerID), Int("process.pid", int64(r.pid))}
	if r.ifname != "" {
		attrs = append(attrs, String("podchron.cni.ifname", r.ifname))
	}
	if r.netns != "" {
		attrs = append(attrs, String("podchron.cni.netns", r.netns))
	}
	status := StatusOK
	if r.signal != 0 {
		attrs = append(attrs, String("podchron.signal", probe.SignalName(r.signal)))
		status = StatusError
	} else {
		attrs = append(attrs, Int("process.exit.code", int64(r.exitCode)))
		if r.exitCode != 0 {
			status = StatusError
		}
	}
	key := fmt.Sprintf("cni/%s/%s/%d@%d", r.command, r.plugin, r.pid, r.start.UnixNano())
	return Span{SpanID: p.spanID(key), Parent: parent, Name: "cni." + r.command + " " + r.plugin,
		Start: r.start, End: r.end, Status: status, Attrs: attrs}
}

// refineReady sharpens the Ready condition's time, which the API server keeps
// in whole seconds (truncated): the pod became ready in [cond, cond+1s), no
// later than the tracer saw it, at the last kernel-observed readiness
// evidence in that window; cond when there is none.
func refineReady(cond, seen time.Time, evidence []time.Time) time.Time {
	upper := cond.Add(time.Second)
	// Kernel stamps are converted from the boot clock and can be a few ms
	// off the wall clock the API fact was seen by: allow the settle time.
	if !seen.IsZero() && seen.Add(settle).Before(upper) {
		upper = seen.Add(settle)
	}
	ready := cond
	for _, t := range evidence {
		if !t.Before(cond) && !t.After(upper) && t.After(ready) {
			ready = t
		}
	}
	return ready
}

// pullSpan is an image pull: Pulling to Pulled, or to its last failure.
func (c *Correlator) pullSpan(p *pod, pl *pull, parent SpanID) Span {
	attrs := []Attr{String("k8s.container.name", pl.container)}
	if img := p.image(pl.container); img != "" {
		attrs = append(attrs, String("container.image.name", img))
	}
	end, status, msg := pl.end, StatusOK, ""
	if !pl.end.IsZero() {
		attrs = append(attrs, String("message", pl.message))
	} else {
		end, status, msg = pl.failedAt, StatusError, pl.failure
		if pl.reason != "" {
			attrs = append(attrs, String("podchron.waiting.reason", pl.reason))
			msg = pl.reason + ": " + pl.failure
		}
	}
	if end.Before(pl.start) {
		end = pl.start
	}
	return Span{SpanID: p.spanID("pull/" + pl.container), Parent: parent, Name: "container.image_pull", Start: pl.start, End: end,
		Status: status, StatusMessage: msg, Attrs: attrs}
}
