// Kernel facts in: cgroups, execs, forks, exits, signals, OOM kills, CNI
// plugin runs. These handlers only update the model and note changes for
// the lifecycle step (lifecycle.go).

package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
)

// podLoss: kernel events lost while the pod lived, and the current loss
// episode (one event on the root). Ring-buffer losses are every live pod's
// (whose they were is unknown); signal records throttled by a cgroup's
// budget in the kernel are only the pod whose container's they were.
type podLoss struct {
	eventsLost  uint64
	lossEvent   int       // index of the current loss episode's root event, -1 if none
	lossLast    time.Time // the last loss report
	lossEpisode uint64    // events lost in the current episode

	signalsThrottled uint64    // signal records the pod's budget refused, in all
	throttleEvent    int       // 1 + index of the current throttling episode's root event; 0 if none
	throttleLast     time.Time // the last throttling report
	throttleEpisode  uint64    // records throttled in the current episode
}

func (c *Correlator) kernel(ev kernel.Event) {
	switch e := ev.(type) {
	case *kernel.CgroupEvent:
		if e.Type == kernel.EventCgroupMkdir {
			c.cgroupSeen(e.ID, e.Path, e.Time, false)
		} else {
			c.cgroupRemoved(e.ID, e.Path, e.Time)
		}
	case *kernel.ExecEvent:
		c.exec(e)
	case *kernel.ForkEvent:
		c.fork(e)
	case *kernel.ExitEvent:
		c.exit(e)
	case *kernel.SignalEvent:
		c.signal(e)
	case *kernel.SignalDeliverEvent:
		c.deliver(e)
	case *kernel.OOMEvent:
		c.oom(e)
	}
}

// cgroupSeen records a cgroup and what it is.
func (c *Correlator) cgroupSeen(id uint64, path string, at time.Time, seeded bool) {
	ident, err := c.parser.Parse(path)
	ref := &cgroupRef{id: id, path: path, ident: ident}
	c.cgroups[id] = ref
	if err != nil {
		return // not a pod's cgroup (a root, a QoS slice, or unrelated)
	}
	if seeded && ident.PodUID != "" {
		// Found at start-up: the pod was alive before the tracer.
		if _, known := c.pods[ident.PodUID]; !known {
			if p := c.pod(ident.PodUID, at, names.MissCgroupAfterTraceEnd); p != nil {
				p.observedFrom = c.started
			}
		}
	}
	switch ident.Kind {
	case cgroupid.KindPod:
		p := c.pod(ident.PodUID, at, names.MissCgroupAfterTraceEnd)
		if p == nil {
			return
		}
		p.cgroupSeen = true
		if p.sandboxCreated.IsZero() && !seeded {
			p.sandboxCreated = at
		}
	case cgroupid.KindContainer:
		if ident.Sub != "" || ident.Conmon {
			return
		}
		p := c.pod(ident.PodUID, at, names.MissCgroupAfterTraceEnd)
		if p == nil {
			return
		}
		ct := c.container(ident.ContainerID, p)
		if ct.cgroupID == 0 {
			ct.cgroupID, ct.cgroupPath = id, path
			ct.cgroupAt = at
		}
	}
}

func (c *Correlator) cgroupRemoved(id uint64, path string, at time.Time) {
	ref := c.cgroups[id]
	if ref == nil {
		ident, err := c.parser.Parse(path)
		if err != nil {
			return
		}
		ref = &cgroupRef{id: id, path: path, ident: ident}
	}
	ref.removed = true
	delete(c.cgroups, id)
	if ref.ident.Kind == cgroupid.KindPod {
		if p, ok := c.pods[ref.ident.PodUID]; ok {
			p.cgroupRemoved = at
			c.note(change{kind: changePodGoing, p: p, at: at})
		}
	}
}

func (c *Correlator) procSeen(ps *fact.ProcSeen) {
	ct := c.byCgroup(ps.CgroupID)
	if ct == nil {
		return
	}
	pr := &proc{tgid: ps.PID, ppid: ps.PPID, ctr: ct, execAt: ps.Started, args: ps.Args}
	if runtimeArgv(ps.Args) && !ct.configured(ps.Args) {
		// The runtime's bootstrap ("runc init"), caught by the scan while
		// it sets the container up: not the init, which it execs next (as
		// exec() tells a bootstrap's exec), then, as a live bootstrap, with
		// no exec of the container's own yet.
		pr.bootstrap, pr.execAt = true, time.Time{}
		c.putProc(pr)
		return
	}
	c.putProc(pr)
	if parent, ok := c.procs[ps.PPID]; ok && parent.ctr == ct {
		pr.session = parent.session
		return
	}
	// Its parent is outside the container: the init, by the process tree
	// (the scan goes by PID, and PIDs wrap: a child can come first).
	if ct.initPID == 0 {
		ct.initPID, ct.initExec, ct.initArgs = ps.PID, ps.Started, ps.Args
		return
	}
	if cur, ok := c.procs[ct.initPID]; ok && cur.ctr == ct && cur.ppid == ps.PID {
		ct.initPID, ct.initExec, ct.initArgs = ps.PID, ps.Started, ps.Args
		return
	}
	if parent, ok := c.procs[ps.PPID]; ok && parent.ctr != nil && parent.ctr.pod == ct.pod {
		// Its parent is another container of the pod (the sandbox's pause
		// reaps orphans in a shared PID namespace): no session.
		return
	}
	// A process that entered the container from outside after its init,
	// alive at the start-up scan: an exec session begun before this
	// instance (a probe, a hook, a kubectl exec; its kind is decided from
	// the spec when it ends, which the scan comes before). Its exec was a
	// kernel fact only the previous instance saw; its end is this one's.
	s := &session{pid: ps.PID, args: ps.Args, start: ps.Started}
	ct.sessions[ps.PID] = s
	pr.session = s
}

func (c *Correlator) exec(e *kernel.ExecEvent) {
	if e.CNI != nil {
		c.cniExec(e)
		return
	}
	if e.Origin&kernel.OriginWatched == 0 {
		return // a runtime process: its facts come through CRI
	}
	ct := c.byCgroup(e.CgroupID)
	if ct == nil {
		if ref := c.cgroups[e.CgroupID]; ref == nil {
			c.miss(names.MissExecUnknownCgroup)
		}
		return
	}
	if c.bootstrapExec(ct, e) {
		if _, ok := c.procs[e.TGID]; !ok {
			c.putProc(&proc{tgid: e.TGID, ctr: ct, bootstrap: true})
		}
		return
	}
	pr, known := c.procs[e.TGID]
	if known && (pr.ctr != ct || pr.bootstrap) {
		// A reused PID, or the runtime's bootstrap now running the real
		// command: decided afresh below.
		c.dropProc(e.TGID)
		known = false
	}
	if known {
		// A process of the container exec'd again (a shell exec'ing the app).
		pr.args = e.Args
		if pr.execAt.IsZero() {
			pr.execAt = e.Time
		}
		switch {
		case pr.session == nil && ct.initPID == e.TGID:
			ct.initArgs = e.Args
		case pr.session != nil && pr.session.pid == e.TGID:
			pr.session.args = e.Args
		case pr.session == nil && !ct.finalized && ct.runtimeInit(e) && ct.initDoubtful():
			c.becomeInit(ct, pr, pr.execAt, e.Args)
		}
		return
	}
	npr := &proc{tgid: e.TGID, ctr: ct, execAt: e.Time, args: e.Args}
	if !ct.finalized && ct.runtimeInit(e) && ct.initDoubtful() {
		c.becomeInit(ct, npr, e.Time, e.Args)
		return
	}
	if parent, ok := c.procs[e.PPID]; ok && parent.ctr == ct && !parent.bootstrap {
		npr.session = parent.session
		c.putProc(npr)
		return
	}
	// A process entering the container from outside: its init, then exec sessions.
	if ct.initPID == 0 && !ct.exited {
		c.becomeInit(ct, npr, e.Time, e.Args)
		return
	}
	s := &session{pid: e.TGID, args: e.Args, start: e.Time}
	s.kind = c.sessionKind(ct, e.Args)
	ct.notePreStopRun(s)
	ct.sessions[e.TGID] = s
	npr.session = s
	c.putProc(npr)
}

func (c *Correlator) fork(e *kernel.ForkEvent) {
	parent, ok := c.procs[e.TGID]
	if !ok {
		return
	}
	c.putProc(&proc{tgid: e.ChildTGID, ctr: parent.ctr, session: parent.session, bootstrap: parent.bootstrap})
}

func (c *Correlator) exit(e *kernel.ExitEvent) {
	if r, ok := c.cni[e.TGID]; ok {
		delete(c.cni, e.TGID)
		c.cniDone(r, e)
		return
	}
	pr, ok := c.procs[e.TGID]
	if !ok {
		c.exitUnattributed(e)
		return
	}
	c.dropProc(e.TGID)
	ct := pr.ctr
	if pr.bootstrap {
		return
	}
	if pr.session != nil {
		if pr.session.pid == e.TGID {
			delete(ct.sessions, e.TGID)
			c.sessionExited(ct, pr.session, e)
		}
		return
	}
	if ct.initPID == e.TGID && (ct.criPID == 0 || ct.criPID == e.TGID) {
		ct.exited = true
		ct.exitAt = e.Time
		ct.exitCode = e.ExitCode
		ct.exitSignal = e.Signal
		c.note(change{kind: changeContainerExited, ct: ct})
	}
}

// exitUnattributed counts the exit of a root process in a pod's cgroup
// that the model holds no process for, when its pod's trace had ended (a
// process the containers' stop left behind) or its cgroup is one the model
// never saw. An unknown process in a live pod's cgroup is not counted: it is
// the runtime's set-up (runc's nsexec stages clone into the container's
// cgroup from the runtime, exit without an exec, and were 224 such exits in
// the lifecycle e2e), and a pod's process the model lacks there is one
// whose exec record was lost, counted as lost by type already.
func (c *Correlator) exitUnattributed(e *kernel.ExitEvent) {
	if e.Origin&kernel.OriginWatched == 0 || c.byCgroup(e.CgroupID) != nil {
		return // a runtime's process, or the set-up's
	}
	why := c.unattributed(e.CgroupID)
	if m := exitMisses[why]; m != "" {
		c.miss(m)
	}
}

// sessionExited records a finished exec session (a failed liveness or
// startup probe, or ready evidence while the start-up is out); its span
// follows once the container is named (see settleContainer).
func (c *Correlator) sessionExited(ct *container, s *session, e *kernel.ExitEvent) {
	if ct.pod == nil {
		return
	}
	ct.doneSessions = append(ct.doneSessions, doneSession{s, e})
	kind := s.kind
	if kind == names.SessionExec || kind == "" {
		kind = c.sessionKind(ct, s.args)
	}
	ok := e.ExitCode == 0 && e.Signal == 0
	switch {
	case kind == names.SessionProbeLiveness && !ok:
		ct.lastLivenessFail = e.Time
	case kind == names.SessionProbeStartup && !ok:
		ct.lastStartupFail = e.Time
	case kind == names.SessionPostStart && !ok:
		ct.postStartFailed, ct.postStartExit = e.Time, e.ExitCode
	case ok && !ct.pod.startupDone && (kind == names.SessionProbeReadiness || kind == names.SessionProbeStartup || kind == names.SessionPostStart):
		// Only until the start-up is out: a probe every few seconds for
		// the pod's whole life must not pile up here.
		ct.pod.addReadyEvidence(e.Time)
	}
	if ct.settleBy.Before(c.now.Add(settle)) && !ct.exited {
		ct.settleBy = c.now.Add(settle)
	}
	if ct.name != "" {
		c.note(change{kind: changeSessionExited, ct: ct})
	}
}

func (c *Correlator) oom(e *kernel.OOMEvent) {
	var ct *container
	if e.VictimKnown {
		ct = c.byCgroup(e.VictimCgroupID)
	}
	if ct == nil {
		if pr, ok := c.procs[e.VictimTGID]; ok {
			ct = pr.ctr
		}
	}
	if ct == nil {
		// A group kill's victim the probes never reported.
		ct = c.oomGroupContainer(e)
	}
	var scope, memcg string
	if ct != nil {
		scope, memcg = c.oomScope(e, ct)
	} else if ct, scope, memcg = c.oomWhere(e); ct == nil {
		return
	}
	if e.VictimTGID == ct.initPID {
		// The container's init died of it: the run's cause.
		ct.oom, ct.oomScope, ct.oomMemcg = e, scope, memcg
	}
	if len(ct.ooms) < maxOOMEvents {
		ct.ooms = append(ct.ooms, oomRec{ev: e, scope: scope, memcg: memcg})
	} else {
		ct.oomsFolded++
	}
	ns := ""
	if ct.pod != nil {
		ns = ct.pod.namespace()
	}
	c.observer(ct.pod).OOMKill(ns, scope)
}

func (c *Correlator) losses(n uint64) {
	if n == 0 {
		return
	}
	for _, p := range c.pods {
		p.eventsLost += n
		// One event per loss episode: reports close together add up.
		if p.lossEvent >= 0 && c.now.Sub(p.lossLast) <= lossEpisodeGap {
			p.lossEpisode += n
			p.rootEvents[p.lossEvent].Attrs = []span.Attr{span.Int(names.EventsLost, int64(p.lossEpisode)),
				span.String(names.LossUntil, c.now.UTC().Format(time.RFC3339Nano))}
		} else {
			p.lossEpisode = n
			p.lossEvent = p.addRootEvent(span.SpanEvent{Name: names.EventsLost, Time: c.now,
				Attrs: []span.Attr{span.Int(names.EventsLost, int64(n))}})
		}
		p.lossLast = c.now
	}
}

// throttled stamps what each cgroup's signal budget in the kernel refused
// on that cgroup's pod only: a count on its root span and one root event per
// throttling episode (reports close together add up). The count goes to the
// pod's namespace's metric; a cgroup that is no known pod's counts under no
// namespace.
func (c *Correlator) throttled(ls []fact.CgroupLoss) {
	byPod := map[*pod]uint64{}
	var order []*pod
	for _, l := range ls {
		p := c.podByCgroup(l.CgroupID)
		if p == nil {
			c.cfg.Observer.SignalsThrottled("", l.Count)
			continue
		}
		if _, ok := byPod[p]; !ok {
			order = append(order, p)
		}
		byPod[p] += l.Count
	}
	for _, p := range order {
		n := byPod[p]
		p.signalsThrottled += n
		c.observer(p).SignalsThrottled(p.namespace(), n)
		if p.throttleEvent > 0 && c.now.Sub(p.throttleLast) <= lossEpisodeGap {
			p.throttleEpisode += n
			p.rootEvents[p.throttleEvent-1].Attrs = []span.Attr{span.Int(names.SignalsThrottled, int64(p.throttleEpisode)),
				span.String(names.LossUntil, c.now.UTC().Format(time.RFC3339Nano))}
		} else {
			p.throttleEpisode = n
			p.throttleEvent = 1 + p.addRootEvent(span.SpanEvent{Name: names.EventSignalsThrottled, Time: c.now,
				Attrs: []span.Attr{span.Int(names.SignalsThrottled, int64(n))}})
		}
		p.throttleLast = c.now
	}
}

// podByCgroup is the live pod a cgroup belongs to: its container's, or the
// pod's own cgroup's.
func (c *Correlator) podByCgroup(id uint64) *pod {
	if ct := c.byCgroup(id); ct != nil && ct.pod != nil {
		return ct.pod
	}
	if ref := c.cgroups[id]; ref != nil && ref.ident.PodUID != "" {
		return c.pods[ref.ident.PodUID]
	}
	return nil
}
