package correlate

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
	"github.com/podchron/podchron/internal/probe"
)

// container is one container (one attempt) of a pod, sandbox included.
type container struct {
	id      string
	pod     *pod
	name    string
	attempt uint32
	// lastLivenessFail is when a liveness probe last failed (kernel view).
	lastLivenessFail time.Time
	lastStartupFail  time.Time // when a startup probe last failed (kernel view)
	sandbox          bool
	init             bool // an init container (not a sidecar)
	podName          string
	podNamespace     string
	memLimit         int64

	cgroupID   uint64
	cgroupPath string
	cgroupAt   time.Time
	createdAt  time.Time
	startedAt  time.Time // the runtime's StartedAt

	initPID  uint32
	initExec time.Time
	initArgs []string
	// criPID and cfgArgs are the runtime's word on the init (its PID and
	// the configured command line); see identity.go.
	criPID   uint32
	cfgArgs  []string
	sessions map[uint32]*session
	pids     map[uint32]struct{} // its live processes (c.procs entries)

	// What went over the caps (bounds.go), counted.
	signalKinds      map[signalKey]bool
	signalsFolded    map[signalKey]int
	probeFailsFolded int
	sessionSpans     map[string]int
	sessionsFolded   map[string]int
	signals          []signalRec
	delivered        map[syscall.Signal]probe.Disposition
	oom              *probe.OOMEvent // the OOM kill of the init, if it died of one
	oomScope         string          // OOMScope*
	oomMemcg         string          // the cgroup whose limit ran out
	ooms             []oomRec        // every OOM kill in the container (init or not), capped
	oomsFolded       int
	probeFails       []SpanEvent

	backoffDone  bool
	unknownExit  bool
	finalized    bool
	runtimeExit  bool
	settleBy     time.Time
	doneSessions []doneSession
	exited       bool
	exitAt       time.Time
	exitCode     int
	exitSignal   syscall.Signal
	reason       string // runtime's reason (OOMKilled, Error, Completed)
	removed      bool
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
	ev    *probe.OOMEvent
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

// session is a process started in a container from outside it after its
// init: a lifecycle hook, an exec probe or a kubectl exec.
type session struct {
	pid   uint32
	args  []string
	start time.Time
	kind  string // poststart, prestop, probe.startup, probe.readiness, probe.liveness, exec
}

type signalRec struct {
	at          time.Time
	sig         syscall.Signal
	senderPID   uint32
	senderComm  string
	senderKind  string
	code        int32
	result      probe.SignalResult
	disposition probe.Disposition
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
			if p := c.pod(ident.PodUID, at); p != nil {
				p.observedFrom = c.started
			}
		}
	}
	switch ident.Kind {
	case cgroupid.KindPod:
		p := c.pod(ident.PodUID, at)
		if p == nil {
			return
		}
		if p.sandboxCreated.IsZero() && !seeded {
			p.sandboxCreated = at
		}
	case cgroupid.KindContainer:
		if ident.Sub != "" || ident.Conmon {
			return
		}
		p := c.pod(ident.PodUID, at)
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
			c.maybeGone(p, at)
		}
	}
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
	ct := &container{id: id, pod: p, sessions: map[uint32]*session{}, pids: map[uint32]struct{}{},
		delivered: map[syscall.Signal]probe.Disposition{}}
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

func (c *Correlator) procSeen(ps *ProcSeen) {
	ct := c.byCgroup(ps.CgroupID)
	if ct == nil {
		return
	}
	pr := &proc{tgid: ps.PID, ppid: ps.PPID, ctr: ct, execAt: ps.Started, args: ps.Args}
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
	}
}

func (c *Correlator) exec(e *probe.ExecEvent) {
	if e.CNI != nil {
		c.cniExec(e)
		return
	}
	if e.Origin&probe.OriginWatched == 0 {
		return // a runtime process: its facts come through CRI
	}
	ct := c.byCgroup(e.CgroupID)
	if ct == nil {
		if ref := c.cgroups[e.CgroupID]; ref == nil {
			c.miss("exec_unknown_cgroup")
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
	ct.sessions[e.TGID] = s
	npr.session = s
	c.putProc(npr)
}

// sessionKind matches an exec session's argv to the pod spec's hooks and probes.
func (c *Correlator) sessionKind(ct *container, args []string) string {
	if ct.pod == nil {
		return "exec"
	}
	spec, _ := ct.pod.spec(ct.name)
	if spec == nil {
		return "exec"
	}
	match := func(h *Handler) bool {
		return h != nil && h.Kind == "exec" && len(h.Exec) > 0 && argsMatch(h.Exec, args)
	}
	switch {
	case spec.PreStop != nil && match(spec.PreStop) && !ct.pod.terminating.IsZero():
		return "prestop"
	case spec.PostStart != nil && match(spec.PostStart):
		return "poststart"
	case spec.Startup != nil && match(&spec.Startup.Handler):
		// The docs' pattern: startup and liveness probes share a command.
		// The startup probe runs until the container is Started, the
		// liveness probe after.
		if spec.Liveness != nil && match(&spec.Liveness.Handler) && ct.pod.containerStarted(ct.name) {
			return "probe.liveness"
		}
		return "probe.startup"
	case spec.Liveness != nil && match(&spec.Liveness.Handler):
		if spec.Readiness != nil && match(&spec.Readiness.Handler) && !ct.pod.startupDone {
			return "probe.readiness"
		}
		return "probe.liveness"
	case spec.Readiness != nil && match(&spec.Readiness.Handler):
		return "probe.readiness"
	case spec.PreStop != nil && match(spec.PreStop):
		return "prestop"
	}
	return "exec"
}

// argsMatch compares a spec command with a captured argv, whose tail may be
// truncated (the kernel captures the first 256 bytes).
func argsMatch(want, got []string) bool {
	if len(got) == 0 || len(got) > len(want) {
		return false
	}
	for i := range got {
		if i == len(got)-1 {
			return strings.HasPrefix(want[i], got[i])
		}
		if got[i] != want[i] {
			return false
		}
	}
	return len(got) == len(want)
}

func (c *Correlator) cniExec(e *probe.ExecEvent) {
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
		if _, gone := c.gone[r.podUID]; gone {
			return nil // cniDone puts it in the finished trace
		}
		return c.pod(r.podUID, r.start)
	}
	if p, ok := c.bySandbox[r.containerID]; ok {
		return p
	}
	return nil
}

func (c *Correlator) fork(e *probe.ForkEvent) {
	parent, ok := c.procs[e.TGID]
	if !ok {
		return
	}
	c.putProc(&proc{tgid: e.ChildTGID, ctr: parent.ctr, session: parent.session, bootstrap: parent.bootstrap})
}

func (c *Correlator) exit(e *probe.ExitEvent) {
	if r, ok := c.cni[e.TGID]; ok {
		delete(c.cni, e.TGID)
		c.cniDone(r, e)
		return
	}
	pr, ok := c.procs[e.TGID]
	if !ok {
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
			c.sessionDone(ct, pr.session, e)
		}
		return
	}
	if ct.initPID == e.TGID && (ct.criPID == 0 || ct.criPID == e.TGID) {
		ct.exited = true
		ct.exitAt = e.Time
		ct.exitCode = e.ExitCode
		ct.exitSignal = e.Signal
		c.containerExited(ct)
	}
}

func (c *Correlator) cniDone(r *cniRun, e *probe.ExitEvent) {
	r.end = e.Time
	r.exitCode = e.ExitCode
	r.signal = e.Signal
	r.done = true
	result := "ok"
	if r.exitCode != 0 || r.signal != 0 {
		result = "error"
	}
	c.cfg.Observer.CNICall(r.plugin, r.command, result, r.end.Sub(r.start))
	if gp, ok := c.gone[r.podUID]; ok && r.podUID != "" {
		// The runtime's second DEL (sandbox removal) after the pod's trace
		// ended: still part of that trace, under its termination.
		c.emit(gp, c.cniSpan(gp, r, c.terminationParent(gp)))
		return
	}
	p := c.cniPod(r)
	if p == nil {
		c.miss("cni_unknown_pod")
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
		c.emit(p, c.cniSpan(p, r, c.terminationParent(p)))
	default:
		p.cniAdd = append(p.cniAdd, r)
	}
	c.podSeen(p) // a finished ADD names the namespace without the API server or runtime
}

func (c *Correlator) signal(e *probe.SignalEvent) {
	if c.setupSignal(e) {
		return
	}
	kind := c.senderKind(e)
	c.cfg.Observer.Signal(probe.SignalName(e.Signal), kind)
	ct := c.byCgroup(e.TargetCgroupID)
	if ct == nil {
		return
	}
	rec := signalRec{
		at: e.Time, sig: e.Signal, senderPID: e.TGID, senderComm: e.Comm, senderKind: kind,
		code: e.Code, result: e.Result, disposition: e.Disposition, nsInit: e.TargetNSInit,
		toInit: e.TargetTGID == ct.initPID,
		// The kernel kills what is left in a PID namespace when its init
		// exits: the "sender" is the exiting init itself.
		pidnsTeardown: e.Code == probe.SIKernel && e.Signal == syscall.SIGKILL && ct.initPID != 0 &&
			e.TGID == ct.initPID && e.TargetTGID != ct.initPID,
	}
	ct.addSignal(rec)
	p := ct.pod
	if p != nil && rec.toInit && kind == "runtime" && p.terminating.IsZero() && e.Signal != syscall.SIGCHLD {
		if reason, ok := c.stopping(p, ct); ok {
			// No deletion came before it: the runtime's stop signal is
			// where the termination shows (a kubelet-initiated one, or
			// one the API server could not tell us about).
			p.terminating = e.Time
			p.terminationReason = reason
		}
	}
}

// setupSignal tells a signal that is no lifecycle fact: the runtime's
// set-up process signalling (upstream runc 1.5's "runc init" sends SIG33,
// glibc's SIGSETXID, to each of its own threads in setuid/setgid), or a
// process's C library signalling its own threads with the signals it
// reserves (32 and 33: thread cancellation, setxid).
func (c *Correlator) setupSignal(e *probe.SignalEvent) bool {
	if pr, ok := c.procs[e.TGID]; ok && pr.bootstrap && e.Code != probe.SIKernel {
		return true
	}
	return e.TGID == e.TargetTGID && (e.Signal == 32 || e.Signal == 33)
}

// stopping tells whether a runtime stop signal to ct means the pod is
// going away (rather than one container being restarted), and why.
func (c *Correlator) stopping(p *pod, ct *container) (string, bool) {
	if p.info == nil {
		return "", true
	}
	if p.info.DeletionTimestamp != nil {
		return "", true
	}
	if reason, ok := p.goingReason(); ok {
		return reason, true
	}
	if p.info.Static && ct.lastLivenessFail.IsZero() && ct.lastStartupFail.IsZero() {
		// A static pod's end is its manifest's removal: no API deletion.
		return "StaticPodRemoved", true
	}
	// A Job's pod: once its regular containers are done, the kubelet
	// stops its sidecars (in reverse order).
	if spec, _ := p.spec(ct.name); spec != nil && spec.Sidecar && p.info.RestartPolicy != "Always" && p.mainContainersDone() {
		return "Completed", true
	}
	return "", false
}

var runtimeComms = []string{"containerd-shim", "containerd", "runc", "crun", "conmon", "crio", "dockerd", "cri-dockerd"}

func (c *Correlator) senderKind(e *probe.SignalEvent) string {
	if e.Code == probe.SIKernel {
		return "kernel"
	}
	if e.TGID == 0 {
		return "kernel"
	}
	// Where the sender runs comes first: a process in a pod's cgroup is that
	// pod's, whatever its comm (a container may run a binary called runc or
	// kubelet, and the kernel's runtime flag is a comm match). CRI-O's
	// conmon, in the pod's cgroup tree but the runtime's, is the exception.
	target := c.byCgroup(e.TargetCgroupID)
	if ref := c.cgroups[e.CgroupID]; ref != nil && ref.ident.PodUID != "" && !ref.ident.Conmon {
		if target != nil && target.pod != nil && ref.ident.PodUID == target.pod.uid {
			return "in_pod"
		}
		return "external"
	}
	if e.Origin&probe.OriginRuntime != 0 {
		return "runtime"
	}
	for _, r := range runtimeComms {
		if strings.HasPrefix(e.Comm, r) {
			return "runtime"
		}
	}
	if e.Comm == "kubelet" {
		return "kubelet"
	}
	return "external"
}

func (c *Correlator) deliver(e *probe.SignalDeliverEvent) {
	ct := c.byCgroup(e.CgroupID)
	if ct == nil || e.TGID != ct.initPID {
		return
	}
	if _, ok := ct.delivered[e.Signal]; !ok {
		ct.delivered[e.Signal] = e.Disposition
	}
}

func (c *Correlator) oom(e *probe.OOMEvent) {
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
		c.miss("oom_unknown_victim")
		return
	}
	scope, memcg := c.oomScope(e, ct)
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
	c.cfg.Observer.OOMKill(ns, scope)
}

// signalOf returns the first signal of a kind sent to the container's init.
func (ct *container) signalOf(sig syscall.Signal) *signalRec {
	i := slices.IndexFunc(ct.signals, func(s signalRec) bool { return s.sig == sig && s.toInit })
	if i < 0 {
		return nil
	}
	return &ct.signals[i]
}
