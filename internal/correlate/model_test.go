package correlate_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/measure"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact/cri"
)

// Synthetic streams for what the recorded runs (no API server) cannot show:
// the API server's view, hooks and probes, liveness restarts, eviction,
// stuck terminations, degraded mode.

type obs struct {
	measure.NopObserver
	calls []string
	// phases: each start-up phase's last measured duration.
	phases map[string]time.Duration
}

// count is how many times the observer got exactly call.
func (o *obs) count(call string) int {
	n := 0
	for _, c := range o.calls {
		if c == call {
			n++
		}
	}
	return n
}

func (o *obs) PodSeen(ns, owner string) { o.calls = append(o.calls, "seen "+ns+" "+owner) }
func (o *obs) PodStartupPhase(ns, phase string, d time.Duration, _ string) {
	o.calls = append(o.calls, "phase "+ns+" "+phase)
	if o.phases == nil {
		o.phases = map[string]time.Duration{}
	}
	o.phases[phase] = d
}
func (o *obs) PodStartup(ns, owner, _ string, d time.Duration, _ string) {
	o.calls = append(o.calls, fmt.Sprintf("startup %s %s %s", ns, owner, d))
}
func (o *obs) PodTermination(ns, owner string, d time.Duration, overrun bool, _ string) {
	o.calls = append(o.calls, fmt.Sprintf("termination %s %s %s overrun=%v", ns, owner, d, overrun))
}
func (o *obs) GracePeriodOverrun(ns string) { o.calls = append(o.calls, "overrun "+ns) }
func (o *obs) PodNotReady(ns, kind string, d time.Duration, _ string) {
	o.calls = append(o.calls, fmt.Sprintf("not ready %s %s %s", ns, kind, d))
}
func (o *obs) EndpointWithdrawnLate(ns string) {
	o.calls = append(o.calls, "endpoint late "+ns)
}
func (o *obs) EndpointWithdrawnAfterNotReady(ns string) {
	o.calls = append(o.calls, "endpoint after not ready "+ns)
}
func (o *obs) ContainerExit(ns, cause string) {
	o.calls = append(o.calls, "exit "+ns+" "+cause)
}
func (o *obs) StuckTerminating(ns string, _ measure.PodRef, stuck bool) {
	o.calls = append(o.calls, fmt.Sprintf("stuck %s %v", ns, stuck))
}
func (o *obs) ContainerStop(ns string, d time.Duration, sigkill bool, _ string) {
	o.calls = append(o.calls, fmt.Sprintf("stop %s %s sigkill=%v", ns, d, sigkill))
}
func (o *obs) OOMKill(ns, scope string) { o.calls = append(o.calls, "oom "+ns+" "+scope) }

type sim struct {
	t     *testing.T
	c     *correlate.Correlator
	o     *obs
	spans []span.Span
	now   time.Time
	uid   string
	info  fact.PodInfo
	cg    map[string]uint64 // container name -> cgroup id
	ids   map[string]string // container name -> container id
	pid   uint32
	// capture, when set, gets every input the scenario feeds (see
	// timing_test.go: the scenarios replayed as streams).
	capture *[]fact.Input
	// pause, when set, is called by startup around the first container's
	// creation (before: false, then after: true) to run the sandbox's
	// pause process at a chosen moment.
	pause func(afterInit bool)
}

// simCapture is given to every new sim (nil: no capture).
var simCapture *[]fact.Input

const podUID = "0b6e0b3c-1f2d-4a5b-9c8d-7e6f5a4b3c2d"

func newSim(t *testing.T) *sim {
	s := &sim{t: t, o: &obs{}, now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), uid: podUID,
		cg: map[string]uint64{}, ids: map[string]string{}, pid: 4000, capture: simCapture}
	s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: s.o, StuckAfter: 10 * time.Second,
		Sink: span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
	s.info = fact.PodInfo{UID: podUID, Name: "web-7d9f", Namespace: "shop", NodeName: "node-a", OwnerKind: "ReplicaSet",
		OwnerName: "web-7d9f", QOSClass: "Burstable", CreatedAt: s.now, TerminationGracePeriodSeconds: 3, Phase: "Pending",
		InitContainers: []fact.ContainerSpec{{Name: "migrate"}},
		Containers: []fact.ContainerSpec{{Name: "app",
			PostStart: &fact.Handler{Kind: "exec", Exec: []string{"sh", "-c", "echo warm"}},
			PreStop:   &fact.Handler{Kind: "exec", Exec: []string{"sleep", "1"}},
			Readiness: &fact.ProbeSpec{Handler: fact.Handler{Kind: "exec", Exec: []string{"cat", "/tmp/ready"}}},
			Liveness:  &fact.ProbeSpec{Handler: fact.Handler{Kind: "exec", Exec: []string{"true"}}},
		}}}
	return s
}

func (s *sim) at(d time.Duration) { s.now = s.now.Add(d) }

func (s *sim) in(x fact.Input) {
	x.Time = s.now
	if s.capture != nil {
		*s.capture = append(*s.capture, x)
	}
	s.c.Handle(x)
}

func (s *sim) kernel(ev kernel.Event) {
	ev.Hdr().Time = s.now
	s.in(fact.Input{Kernel: ev})
}

func (s *sim) pod() { cp := s.info; s.in(fact.Input{Pod: &cp}) }

func (s *sim) cond(typ string) {
	s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: typ, Status: "True", LastTransitionTime: s.now})
	s.pod()
}

func (s *sim) event(reason, container, msg string) {
	s.in(fact.Input{Event: &fact.K8sEvent{UID: fmt.Sprintf("ev-%d", s.now.UnixNano()), PodUID: s.uid, Reason: reason,
		Container: container, Message: msg, FirstTime: s.now, LastTime: s.now, Count: 1}})
}

func (s *sim) mkdir(id uint64, path string) {
	s.kernel(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Origin: kernel.OriginWatched}, ID: id, Path: path})
}

// container: cgroup, CRI create+start, and its init's exec.
func (s *sim) container(name string, id string, attempt uint32) uint32 {
	cgid := uint64(9000 + len(s.cg)*10 + int(attempt))
	s.cg[name] = cgid
	s.ids[name] = id
	s.mkdir(cgid, "/kubepods/burstable/pod"+s.uid+"/"+id)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
		Container: &cri.Container{ID: id, SandboxID: "sb1", Name: name, Attempt: attempt, PodUID: s.uid, CreatedAt: s.now}}})
	s.at(20 * time.Millisecond)
	pid := s.exec(name, 1, "/app", name)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerStarted, At: s.now,
		Container: &cri.Container{ID: id, SandboxID: "sb1", Name: name, Attempt: attempt, PodUID: s.uid, StartedAt: s.now}}})
	return pid
}

func (s *sim) exec(name string, ppid uint32, args ...string) uint32 {
	s.pid++
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: s.cg[name], TGID: s.pid, PID: s.pid, PPID: ppid, Comm: "x"},
		Filename: args[0], Args: args})
	return s.pid
}

func (s *sim) exit(name string, pid uint32, code int, sig syscall.Signal) {
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginWatched, CgroupID: s.cg[name], TGID: pid, PID: pid}, ExitCode: code, Signal: sig})
}

func (s *sim) signal(name string, target uint32, sig syscall.Signal, senderComm string, result kernel.SignalResult, disp kernel.Disposition) {
	s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: 77, Comm: senderComm, CgroupID: 1},
		Signal: sig, Code: kernel.SIUser, Result: result, Disposition: disp, TargetTGID: target, TargetPID: target, TargetCgroupID: s.cg[name], TargetNSInit: true})
}

// gracefulStop: the runtime's SIGTERM, taken by a handler; after d the
// container exits 0 and the runtime reports it Completed.
func (s *sim) gracefulStop(name string, pid uint32, d time.Duration) {
	s.signal(name, pid, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.at(d)
	s.exit(name, pid, 0, 0)
	s.cri(cri.EventContainerExited, name, 0, "Completed")
}

func (s *sim) cri(typ cri.EventType, name string, code int32, reason string) {
	s.in(fact.Input{Runtime: &cri.Event{Type: typ, At: s.now,
		Container: &cri.Container{ID: s.ids[name], SandboxID: "sb1", Name: name, PodUID: s.uid, ExitCode: code, Reason: reason, FinishedAt: s.now}}})
}

func (s *sim) tick(d time.Duration) {
	s.at(d)
	s.in(fact.Input{Tick: true})
}

// startup drives a pod to Ready: scheduling, sandbox and CNI, an init
// container, the app with its postStart hook and readiness probes.
func (s *sim) startup() uint32 {
	s.pod()
	s.event("Scheduled", "", "Successfully assigned shop/web-7d9f to node-a")
	s.at(100 * time.Millisecond)
	s.cond("PodScheduled")
	s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	s.at(10 * time.Millisecond)
	s.pid++
	cni := s.pid
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, TGID: cni, PID: cni, Comm: "bridge"}, Filename: "/opt/cni/bin/bridge",
		CNI: &kernel.CNIRun{Command: "ADD", ContainerID: "sb1", IfName: "eth0", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop"}})
	s.at(40 * time.Millisecond)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginCNI, TGID: cni, PID: cni}})
	if s.pause != nil {
		s.pause(false)
	}
	s.event("Pulled", "migrate", `Container image "busybox" already present on machine`)
	init := s.container("migrate", "c0ffee01", 0)
	if s.pause != nil {
		s.pause(true)
	}
	s.at(500 * time.Millisecond)
	s.exit("migrate", init, 0, 0)
	s.cri(cri.EventContainerExited, "migrate", 0, "Completed")
	s.cond("Initialized")
	app := s.container("app", "c0ffee02", 0)
	hook := s.exec("app", 99, "sh", "-c", "echo warm")
	s.at(30 * time.Millisecond)
	s.exit("app", hook, 0, 0)
	s.at(time.Second)
	probe1 := s.exec("app", 99, "cat", "/tmp/ready")
	s.at(5 * time.Millisecond)
	s.exit("app", probe1, 1, 0)
	s.at(time.Second)
	probe2 := s.exec("app", 99, "cat", "/tmp/ready")
	s.at(5 * time.Millisecond)
	s.exit("app", probe2, 0, 0)
	s.cond("ContainersReady")
	s.cond("Ready")
	s.tick(2 * time.Second)
	return app
}

func (s *sim) find(name string) []span.Span {
	var out []span.Span
	for _, sp := range s.spans {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (s *sim) one(name string) span.Span {
	s.t.Helper()
	f := s.find(name)
	if len(f) != 1 {
		s.t.Fatalf("want one %s span, got %d\n%s", name, len(f), render(s.spans))
	}
	return f[0]
}

func (s *sim) byID(id span.SpanID) string {
	for _, sp := range s.spans {
		if sp.SpanID == id {
			return sp.Name
		}
	}
	return "?"
}

func TestStartupFromAPIAndKernel(t *testing.T) {
	s := newSim(t)
	s.startup()
	st := s.one(names.SpanPodStartup)
	if st.Start != s.info.CreatedAt || st.Duration() != 2730*time.Millisecond {
		t.Errorf("startup %s..%s", st.Start, st.End)
	}
	for name, parent := range map[string]string{names.SpanPodScheduling: names.SpanPodStartup, names.SpanPodSandbox: names.SpanPodStartup, "cni.ADD bridge": names.SpanPodSandbox,
		names.SpanContainerInit: names.SpanPodStartup, names.SpanContainerStart: names.SpanPodStartup, names.SpanContainerPostStart: names.SpanPodStartup} {
		sp := s.one(name)
		if got := s.byID(sp.Parent); got != parent {
			t.Errorf("%s: parent %s, want %s", name, got, parent)
		}
	}
	if d := s.one(names.SpanPodScheduling).Duration(); d != 100*time.Millisecond {
		t.Errorf("scheduling took %s", d)
	}
	if in := s.one(names.SpanContainerInit); in.Attr(names.K8sContainerName) != "migrate" || in.Attr(names.ExitCause) != "completed" {
		t.Errorf("init: %v", in.Attrs)
	}
	probes := s.find("probe.readiness")
	if len(probes) != 2 || probes[0].Attr(names.ProbeResult) != "failure" || probes[1].Attr(names.ProbeResult) != "success" {
		t.Fatalf("readiness probes: %+v", probes)
	}
	if got := strings.Join(s.o.calls, ";"); !strings.Contains(got, "startup shop ReplicaSet") || !strings.Contains(got, "exit shop completed") {
		t.Errorf("observer: %s", got)
	}
	// Passing liveness probes after start-up are not spans.
	lp := s.exec("app", 99, "true")
	s.at(5 * time.Millisecond)
	s.exit("app", lp, 0, 0)
	s.tick(2 * time.Second)
	if n := len(s.find("probe.liveness")); n != 0 {
		t.Errorf("%d liveness spans for passing probes", n)
	}
}

// Deletion with a preStop hook, SIGTERM ignored by PID 1, SIGKILL at the end
// of the grace period.
func TestTerminationOverrun(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	del := s.now.Add(3 * time.Second)
	grace := int64(3)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	ps := s.exec("app", 99, "sleep", "1")
	s.at(time.Second)
	s.exit("app", ps, 0, 0)
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionDefault)
	s.at(2 * time.Second)
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.at(500 * time.Millisecond)
	s.info.Deleted = true
	s.pod()

	term := s.one(names.SpanPodTermination)
	if term.Start != del.Add(-3*time.Second) || term.Attr(names.GracePeriodOverrun) != true || term.Status != span.StatusError {
		t.Errorf("termination: start %s status %s attrs %v", term.Start, term.Status, term.Attrs)
	}
	stop := s.one(names.SpanContainerStop)
	if stop.Attr(names.SignalDisposition) != "ignored" || stop.Attr(names.Sigkill) != true || s.byID(stop.Parent) != names.SpanPodTermination {
		t.Errorf("stop: %v", stop.Attrs)
	}
	if pre := s.one(names.SpanContainerPreStop); pre.Duration() != time.Second || s.byID(pre.Parent) != names.SpanPodTermination {
		t.Errorf("prestop: %+v", pre)
	}
	if run := s.find(names.SpanContainerRun); len(run) != 1 || run[0].Attr(names.ExitCause) != "killed_by_runtime" {
		t.Errorf("run: %+v", run)
	}
	root := s.one("pod")
	if !root.Parent.IsZero() || root.Attr(names.OwnerKind) != "ReplicaSet" {
		t.Errorf("root: %+v", root)
	}
	if s.spans[len(s.spans)-1].Name != "pod" {
		t.Errorf("the root span must come last, got %s", s.spans[len(s.spans)-1].Name)
	}
	calls := strings.Join(s.o.calls, ";")
	for _, want := range []string{"overrun shop", "termination shop ReplicaSet 3.5s overrun=true", "exit shop killed_by_runtime"} {
		if !strings.Contains(calls, want) {
			t.Errorf("observer missing %q: %s", want, calls)
		}
	}
}

func TestLivenessRestartAndBackoff(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.event("Unhealthy", "app", "Liveness probe failed: command \"true\" timed out")
	s.at(10 * time.Millisecond)
	s.event("Killing", "app", "Container app failed liveness probe, will be restarted")
	s.signal("app", app, syscall.SIGTERM, "containerd-shim", kernel.SignalDelivered, kernel.DispositionDefault)
	s.at(50 * time.Millisecond)
	s.exit("app", app, 0, syscall.SIGTERM)
	s.cri(cri.EventContainerExited, "app", 143, "Error")
	s.at(10 * time.Second)
	s.container("app", "c0ffee03", 1)
	s.tick(2 * time.Second)
	run := s.find(names.SpanContainerRun)
	if len(run) != 1 || run[0].Attr(names.ExitCause) != "liveness_restart" {
		t.Fatalf("run: %+v", run)
	}
	bo := s.one(names.SpanContainerBackoff)
	if bo.Attr(names.BackoffSeconds) != 10.0 || bo.Attr(names.K8sContainerRestartCount) != int64(1) {
		t.Errorf("backoff: %v", bo.Attrs)
	}
}

func TestStuckTermination(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	del := s.now.Add(time.Second)
	grace := int64(1)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.tick(5 * time.Second)
	if strings.Contains(strings.Join(s.o.calls, ";"), "stuck") {
		t.Fatal("stuck before StuckAfter")
	}
	s.tick(10 * time.Second)
	if !strings.Contains(strings.Join(s.o.calls, ";"), "stuck shop true") {
		t.Fatalf("not reported stuck: %v", s.o.calls)
	}
	// Visible now, while stuck: an interim span in the pod's trace, from
	// the end of the grace period, naming what still runs.
	stuck := s.one(names.SpanPodTerminationStuck)
	if stuck.Status != span.StatusError || !stuck.Start.Equal(del) || stuck.Attr(names.LingeringContainers) != "app" ||
		!strings.Contains(stuck.StatusMessage, "containers still running: app") {
		t.Errorf("stuck span: %+v", stuck)
	}
	if len(s.find(names.SpanPodTermination)) != 0 || len(s.find(names.SpanPod)) != 0 {
		t.Errorf("termination or root emitted while the pod is still there")
	}
	s.exit("app", app, 0, syscall.SIGTERM)
	s.info.Deleted = true
	s.pod()
	term := s.one(names.SpanPodTermination)
	if term.Attr(names.TerminationStuck) != true || term.Status != span.StatusError {
		t.Errorf("termination: %+v", term)
	}
	if !strings.Contains(strings.Join(s.o.calls, ";"), "stuck shop false") {
		t.Errorf("stuck gauge not released: %v", s.o.calls)
	}
}

func TestEvictionAndDegraded(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{API: &fact.APIStatus{Available: false, Err: "connection refused"}})
	app := s.startup()
	s.info.Reason = "Evicted"
	s.pod()
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.exit("app", app, 0, syscall.SIGTERM)
	s.cri(cri.EventContainerExited, "app", 143, "Error")
	s.tick(2 * time.Second)
	run := s.one(names.SpanContainerRun)
	if run.Attr(names.ExitCause) != "evicted" {
		t.Errorf("cause %v", run.Attr(names.ExitCause))
	}
	if d, _ := run.Attr(names.Degraded).(string); !strings.Contains(d, "apiserver unavailable") {
		t.Errorf("degraded: %v", run.Attrs)
	}
}

func TestLossesMarkLivePods(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.in(fact.Input{Losses: &fact.Losses{Lost: 42}})
	s.exit("app", app, 0, syscall.SIGTERM)
	s.info.Deleted = true
	s.pod()
	root := s.one("pod")
	if root.Attr(names.EventsLost) != int64(42) {
		t.Errorf("root: %v", root.Attrs)
	}
	var ev bool
	for _, e := range root.Events {
		ev = ev || e.Name == names.EventsLost
	}
	if !ev {
		t.Error("no events_lost span event")
	}
}
