package correlate_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/measure"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// poleObs records the long pole each start-up was measured under.
type poleObs struct {
	measure.NopObserver
	poles []string
}

func (o *poleObs) PodStartup(_, _, longPole string, _ time.Duration, _ string) {
	o.poles = append(o.poles, longPole)
}

// withPoleObserver gives the sim a correlator whose observer records the
// long poles.
func withPoleObserver(s *sim) *poleObs {
	o := &poleObs{}
	s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: o, StuckAfter: 10 * time.Second,
		Sink: span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
	return o
}

func verdict(sp span.Span) string { v, _ := sp.Attr(names.Verdict).(string); return v }

// wantVerdict checks a span's verdict against the exact words.
func wantVerdict(t *testing.T, sp span.Span, want string) {
	t.Helper()
	if got := verdict(sp); got != want {
		t.Errorf("%s verdict:\n got %q\nwant %q", sp.Name, got, want)
	}
}

// sigkilledAtGraceEnd: 3 s later (a 3 s grace period's end) the runtime
// SIGKILLs the app's init, which dies; the runtime reports exit 137 and
// the pod is gone half a second later.
func (s *sim) sigkilledAtGraceEnd(app uint32) {
	s.at(3 * time.Second)
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.at(500 * time.Millisecond)
	s.gone()
}

func (s *sim) deleteWithGrace(grace int64) {
	del := s.now.Add(time.Duration(grace) * time.Second)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
}

// limitedContainer is sim.container for a container whose memory limit
// the runtime reports.
func (s *sim) limitedContainer(name, id string, attempt uint32, limit int64) uint32 {
	cgid := uint64(9000 + len(s.cg)*10 + int(attempt))
	s.cg[name], s.ids[name] = cgid, id
	s.mkdir(cgid, "/kubepods/burstable/pod"+s.uid+"/"+id)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
		Container: &cri.Container{ID: id, SandboxID: "sb1", Name: name, Attempt: attempt, PodUID: s.uid, CreatedAt: s.now, MemoryLimitBytes: limit}}})
	s.at(20 * time.Millisecond)
	pid := s.exec(name, 1, "/app", name)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerStarted, At: s.now,
		Container: &cri.Container{ID: id, SandboxID: "sb1", Name: name, Attempt: attempt, PodUID: s.uid, StartedAt: s.now}}})
	return pid
}

// A runtime slow to act: the SIGTERM comes 20 s after the deletion (e2e 1
// on a loaded containerd 1.6, 2026-12-06: 30 s). The verdict tells the wait,
// not only that the container exited at once.
func TestVerdictSignalLate(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].PreStop = nil
	app := s.startup()
	s.deleteWithGrace(30)
	s.at(20 * time.Second)
	s.gracefulStop("app", app, 200*time.Millisecond)
	s.at(500 * time.Millisecond)
	s.gone()
	wantVerdict(t, s.one(names.SpanPodTermination),
		"terminated in 20.7 s: container app handled SIGTERM and exited in 200 ms; its SIGTERM came 20.0 s after the termination began")
}

// A graceful stop: the start-up's long pole (the wait for Ready after the
// app ran, in startup()), its time and share; the stop handled in time.
func TestVerdictGracefulStop(t *testing.T) {
	s := newSim(t)
	o := withPoleObserver(s)
	app := s.startup()
	s.deleteWithGrace(3)
	s.gracefulStop("app", app, 200*time.Millisecond)
	s.at(500 * time.Millisecond)
	s.gone()

	st := s.one(names.SpanPodStartup)
	wantVerdict(t, st, "started in 2.7 s; long pole: readiness 2.0 s (75 %)")
	if st.Attr(names.StartupLongPole) != names.PhaseReadiness || st.Attr(names.StartupLongPoleSeconds) != (2040*time.Millisecond).Seconds() {
		t.Errorf("long pole %v %v", st.Attr(names.StartupLongPole), st.Attr(names.StartupLongPoleSeconds))
	}
	if len(o.poles) != 1 || o.poles[0] != names.PhaseReadiness {
		t.Errorf("metric long poles %v, want [readiness]", o.poles)
	}
	wantVerdict(t, s.one(names.SpanPodTermination), "terminated in 700 ms: container app handled SIGTERM and exited in 200 ms")
	root := s.one(names.SpanPod)
	wantVerdict(t, root, "started in 2.7 s; long pole: readiness 2.0 s (75 %); terminated in 700 ms: container app handled SIGTERM and exited in 200 ms")
	if root.Attr(names.StartupLongPole) != names.PhaseReadiness {
		t.Errorf("root long pole %v", root.Attr(names.StartupLongPole))
	}
	if run := s.one(names.SpanContainerRun); run.Attr(names.Verdict) != nil || run.Attr(names.K8sContainerStatusLastTerminatedReason) != "Completed" {
		t.Errorf("run of a graceful stop: verdict %v (none without a restart), reason %v", run.Attr(names.Verdict), run.Attr(names.K8sContainerStatusLastTerminatedReason))
	}
}

// SIGTERM ignored, SIGKILL at the end of the grace period.
func TestVerdictIgnoredSIGTERM(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.info.Containers[0].PreStop = nil
	s.deleteWithGrace(3)
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionDefault)
	s.sigkilledAtGraceEnd(app)

	want := "terminated in 3.5 s: container app ignored SIGTERM and was SIGKILLed at the end of the 3 s grace period"
	wantVerdict(t, s.one(names.SpanPodTermination), want)
	if root := verdict(s.one(names.SpanPod)); !strings.HasSuffix(root, "; "+want) {
		t.Errorf("root verdict %q does not end with the termination's", root)
	}
	if r := s.one(names.SpanContainerRun).Attr(names.K8sContainerStatusLastTerminatedReason); r != "Error" {
		t.Errorf("last_terminated_reason %v, want the runtime's Error", r)
	}
}

// A crash loop of OOM kills at the container's limit: each restarted run
// says so, each back-off too, and the root counts the restarts by cause.
func TestVerdictOOMCrashLoop(t *testing.T) {
	s := newSim(t)
	s.info.RestartPolicy = "Always"
	app := s.startup()
	for attempt := uint32(1); attempt <= 3; attempt++ {
		s.at(time.Second)
		s.oomKill("app", app, "app", memcgs(uint64(attempt), 0, 0, 0, 0)...)
		s.exit("app", app, 0, syscall.SIGKILL)
		s.cri(cri.EventContainerExited, "app", 137, "OOMKilled")
		s.at(10 * time.Second)
		app = s.limitedContainer("app", "c0ffee1"+string(rune('0'+attempt)), attempt, 256<<20)
		s.tick(2 * time.Second)
	}
	s.deleteWithGrace(3)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.at(500 * time.Millisecond)
	s.gone()

	runs := s.find(names.SpanContainerRun)
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4:\n%s", len(runs), render(s.spans))
	}
	oom := "OOM-killed (limit of the container: 256Mi)"
	// The first run's container was created without a limit reported.
	wantVerdict(t, runs[0], "run #1 of app ended after 5.1 s: OOM-killed (limit of the container)")
	for i, r := range runs[:3] {
		if v := verdict(r); i > 0 && (!strings.HasPrefix(v, "run #") || !strings.HasSuffix(v, ": "+oom)) {
			t.Errorf("run %d verdict %q, want the OOM kill", i, v)
		}
		if r.Attr(names.K8sContainerStatusLastTerminatedReason) != "OOMKilled" {
			t.Errorf("run %d last_terminated_reason %v", i, r.Attr(names.K8sContainerStatusLastTerminatedReason))
		}
	}
	wantVerdict(t, runs[3], "run #4 of app ended after 2.1 s: completed")
	if bo := s.find(names.SpanContainerBackoff); len(bo) != 3 || verdict(bo[2]) != "app waited 10.0 s in back-off before restart #3" {
		t.Errorf("back-offs: %d, last verdict %q", len(bo), verdict(bo[len(bo)-1]))
	}
	root := verdict(s.one(names.SpanPod))
	if !strings.Contains(root, "; restarted 3 times: "+oom+"; terminated in ") {
		t.Errorf("root verdict %q, want the restarts and their cause", root)
	}
}

// An eviction by the kubelet: the status's reason and message on the root
// (k8s.pod.status.reason) and in the verdict.
func TestVerdictEviction(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.info.Phase, s.info.Reason = "Failed", "Evicted"
	s.info.Message = `Usage of EmptyDir volume "scratch" exceeds the limit "1Gi". `
	s.pod()
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.at(300 * time.Millisecond)
	s.exit("app", app, 0, syscall.SIGTERM)
	s.cri(cri.EventContainerExited, "app", 143, "Error")
	s.tick(2 * time.Second)
	s.at(500 * time.Millisecond)
	s.gone()

	root := s.one(names.SpanPod)
	if root.Attr(names.K8sPodStatusReason) != "Evicted" {
		t.Errorf("k8s.pod.status.reason %v", root.Attr(names.K8sPodStatusReason))
	}
	want := `evicted by the kubelet: Usage of EmptyDir volume "scratch" exceeds the limit "1Gi"`
	if v := verdict(root); !strings.Contains(v, want) {
		t.Errorf("root verdict %q, want %q in it", v, want)
	}
	if v := verdict(s.one(names.SpanPodTermination)); !strings.HasPrefix(v, want+"; terminated in ") {
		t.Errorf("termination verdict %q", v)
	}
}

// A liveness restart: the kubelet's decision named on the run and in the
// root's count.
func TestVerdictLivenessRestart(t *testing.T) {
	s := newSim(t)
	s.info.RestartPolicy = "Always"
	app := s.startup()
	s.event("Unhealthy", "app", "Liveness probe failed: command \"true\" timed out")
	s.at(10 * time.Millisecond)
	s.event("Killing", "app", "Container app failed liveness probe, will be restarted")
	s.signal("app", app, syscall.SIGTERM, "containerd-shim", kernel.SignalDelivered, kernel.DispositionDefault)
	s.at(50 * time.Millisecond)
	s.exit("app", app, 0, syscall.SIGTERM)
	s.cri(cri.EventContainerExited, "app", 143, "Error")
	s.at(10 * time.Second)
	app = s.container("app", "c0ffee03", 1)
	s.tick(2 * time.Second)
	runs := s.find(names.SpanContainerRun)
	if len(runs) != 1 || !strings.HasSuffix(verdict(runs[0]), ": its liveness probe failed: the kubelet restarted it") {
		t.Fatalf("run verdict %q", verdict(runs[0]))
	}
	s.deleteWithGrace(3)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.at(500 * time.Millisecond)
	s.gone()
	if v := verdict(s.one(names.SpanPod)); !strings.Contains(v, "; restarted once: its liveness probe failed: the kubelet restarted it; terminated in ") {
		t.Errorf("root verdict %q", v)
	}
}

// A slow image pull is the long pole, with its share of the start-up.
func TestVerdictSlowImagePull(t *testing.T) {
	s := newSim(t)
	o := withPoleObserver(s)
	s.info.InitContainers = nil
	s.info.Containers[0].PostStart, s.info.Containers[0].Readiness = nil, nil
	s.pod()
	s.at(100 * time.Millisecond)
	s.cond("PodScheduled")
	s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	s.at(time.Second)
	s.event("Pulling", "app", `Pulling image "registry.example/app:1.2"`)
	s.at(35 * time.Second)
	s.event("Pulled", "app", `Successfully pulled image "registry.example/app:1.2" in 35s`)
	s.container("app", "c0ffee02", 0)
	s.at(100 * time.Millisecond)
	s.cond("ContainersReady")
	s.cond("Ready")
	s.tick(2 * time.Second)

	st := s.one(names.SpanPodStartup)
	if st.Attr(names.StartupLongPole) != names.PhaseImagePull || st.Attr(names.StartupLongPoleSeconds) != 35.0 {
		t.Errorf("long pole %v %v, want image_pull 35", st.Attr(names.StartupLongPole), st.Attr(names.StartupLongPoleSeconds))
	}
	wantVerdict(t, st, "started in 36.2 s; long pole: image pull 35.0 s (97 %)")
	if len(o.poles) != 1 || o.poles[0] != names.PhaseImagePull {
		t.Errorf("metric long poles %v", o.poles)
	}
}

// The recorded runs (real kernel, real containerd) say in words what they
// did: a graceful stop, SIGTERM ignored then SIGKILL, an OOM kill.
func TestVerdictRecorded(t *testing.T) {
	want := map[string][]string{
		"graceful-stop":   {"started in ", "; long pole: ", "terminated in ", ": container app handled SIGTERM and exited in "},
		"ignored-sigterm": {"started in ", "; long pole: ", ": container app ignored SIGTERM and was SIGKILLed"},
		"oom-killed":      {"started in ", "; long pole: ", "eater: OOM-killed (limit of the container: 32Mi)"},
	}
	for _, run := range recorded(t) {
		words, ok := want[run.base]
		if !ok {
			continue
		}
		t.Run(run.base, func(t *testing.T) {
			var root *span.Span
			spans := replay(run.inputs)
			for i := range spans {
				if spans[i].Name == names.SpanPod {
					root = &spans[i]
				}
			}
			if root == nil {
				t.Fatal("no root span")
			}
			v := verdict(*root)
			for _, w := range words {
				if !strings.Contains(v, w) {
					t.Errorf("root verdict %q lacks %q", v, w)
				}
			}
			if root.Attr(names.StartupLongPole) == nil {
				t.Errorf("root without a long pole: %v", root.Attrs)
			}
		})
	}
}

// Every verdict is one line, bounded.
func TestVerdictBounded(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.info.Phase, s.info.Reason = "Failed", "Evicted"
	s.info.Message = strings.Repeat("x", 4096) + "\n"
	s.pod()
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.tick(2 * time.Second)
	s.at(500 * time.Millisecond)
	s.gone()
	for _, sp := range s.spans {
		if v := verdict(sp); len(v) > 320 || strings.Contains(v, "\n") {
			t.Errorf("%s verdict of %d bytes: %q", sp.Name, len(v), v)
		}
	}
	if verdict(s.one(names.SpanPod)) == "" {
		t.Error("root without a verdict")
	}
}

// The kubelet's own restart after a failed postStart hook: named with its
// reason on the run, counted with the app's own crash on the root.
func TestVerdictKubeletRestart(t *testing.T) {
	s := newSim(t)
	s.info.RestartPolicy = "Always"
	first := s.startup()
	s.at(time.Second)
	s.exit("app", first, 1, 0)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.at(time.Second)
	app := s.container("app", "c0ffee04", 1)
	hook := s.exec("app", 99, "sh", "-c", "echo warm")
	s.at(30 * time.Millisecond)
	s.exit("app", hook, 1, 0)
	s.event("FailedPostStartHook", "app", `Exec lifecycle hook ([sh -c echo warm]) for Container "app" in Pod "web-7d9f_shop" failed - error: command 'sh -c echo warm' exited with 1: , message: ""`)
	s.event("Killing", "app", "FailedPostStartHook")
	s.at(10 * time.Millisecond)
	s.gracefulStop("app", app, 30*time.Millisecond)
	s.at(300 * time.Millisecond)
	last := s.container("app", "c0ffee05", 2)
	s.tick(3 * time.Second)
	wantVerdict(t, s.runOf("c0ffee04"), "run #2 of app ended after 90 ms: the kubelet restarted it (poststart hook failed)")
	wantVerdict(t, s.runOf("c0ffee02"), "run #1 of app ended after 5.1 s: exited with code 1")
	s.deleteWithGrace(3)
	s.gracefulStop("app", last, 100*time.Millisecond)
	s.at(500 * time.Millisecond)
	s.gone()
	if v := verdict(s.one(names.SpanPod)); !strings.Contains(v, "; restarted 2 times: 1× exited with code 1, 1× the kubelet restarted it (poststart hook failed); terminated in ") {
		t.Errorf("root verdict %q", v)
	}
}

// A start-up that never got Ready: its long pole first (a failed pull
// counts to its last failure), the failure's long words last and cut, so
// the root still says how the pod ended.
func TestVerdictFailedStartup(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.info.Containers[0].Image = "registry.invalid/app:1"
	s.sandboxUp()
	s.event("Pulling", "app", `Pulling image "registry.invalid/app:1"`)
	s.at(300 * time.Millisecond)
	s.event("Failed", "app", "Error: ErrImagePull")
	s.waiting(false, "app", "ErrImagePull", "failed to resolve reference")
	s.at(20 * time.Second)
	s.event("Failed", "app", "Error: ErrImagePull")
	s.waiting(false, "app", "ImagePullBackOff", `Back-off pulling image "registry.invalid/app:1": `+strings.Repeat("failed to resolve reference; ", 20))
	s.at(time.Second)
	s.deleteNow()
	s.tick(time.Second)
	s.gone()
	st := s.one(names.SpanPodStartup)
	v := verdict(st)
	if !strings.HasPrefix(v, "never Ready after 21.") || !strings.Contains(v, " (long pole: image pull 20.3 s (") ||
		!strings.Contains(v, "): terminating before Ready: container app: ImagePullBackOff: Back-off pulling image") || len(v) > 300 {
		t.Errorf("start-up verdict (%d bytes) %q", len(v), v)
	}
	if st.Attr(names.StartupLongPole) != names.PhaseImagePull {
		t.Errorf("long pole %v", st.Attr(names.StartupLongPole))
	}
	if root := verdict(s.one(names.SpanPod)); !strings.HasPrefix(root, v+"; ") || !strings.Contains(root, "terminated in ") {
		t.Errorf("root verdict %q, want the start-up's then the termination's", root)
	}
}

// SIGTERM ignored, SIGKILL at the end of the grace period, with the
// deletion seen after the SIGTERM and stamped 60 ms after it (the watch
// delivered it late; its time is the API server's whole second mapped onto
// ours): the stop is the termination's, and the termination overran (e2e
// 51 on the 1.37 leg under load, 2026-11-28, said "exited 3.1 s after
// SIGTERM" with no overrun beside a container.stop that overran).
func TestVerdictIgnoredSIGTERMDeletionSeenLate(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.info.Containers[0].PreStop = nil
	sigterm := s.now
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionDefault)
	s.at(60 * time.Millisecond)
	grace := int64(3)
	del := s.now.Add(3 * time.Second)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.sigkilledAtGraceEnd(app)

	term := s.one(names.SpanPodTermination)
	if term.Attr(names.GracePeriodOverrun) != true || !term.Start.Equal(sigterm) {
		t.Errorf("termination: start %s (SIGTERM %s) overrun %v", term.Start, sigterm, term.Attr(names.GracePeriodOverrun))
	}
	wantVerdict(t, term, "terminated in 3.6 s: container app ignored SIGTERM and was SIGKILLed at the end of the 3 s grace period")
}
