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
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// The kubelet's own decisions: it stops a container while its pod is not
// terminating (a failed probe it runs over the network, a failed postStart
// hook, a changed definition, a resize) and starts a new attempt, or it
// evicts the pod alone (emptyDir sizeLimit, ephemeral storage). Its events
// may be missing (its recorder allows 25 per pod, then one per 5 minutes)
// or come after the runtime's exit: the stop with no termination and the
// new attempt decide that the kubelet killed it; events only name why.

// runOf is the container.run span of one attempt (by container ID).
func (s *sim) runOf(id string) span.Span {
	s.t.Helper()
	for _, sp := range s.find(names.SpanContainerRun) {
		if sp.Attr(names.ContainerID) == id {
			return sp
		}
	}
	s.t.Fatalf("no container.run of %s\n%s", id, render(s.spans))
	return span.Span{}
}

// kubeletRestart: the runtime's SIGTERM to the app (taken by a handler),
// its exit 0 and the runtime's Completed, then (events in between, when
// given) the kubelet's next attempt.
func (s *sim) kubeletRestart(app uint32, between func()) {
	s.gracefulStop("app", app, 30*time.Millisecond)
	s.at(100 * time.Millisecond)
	if between != nil {
		between()
	}
	s.at(200 * time.Millisecond)
	s.container("app", "c0ffee03", 1)
	s.tick(3 * time.Second)
}

// wantRestart checks the first attempt's run: an error with the cause, and
// a message (or reason) containing want.
func wantRestart(t *testing.T, run span.Span, cause names.Cause, want string) {
	t.Helper()
	msg, _ := run.Attr(names.Message).(string)
	reason, _ := run.Attr(names.KubeletRestartReason).(string)
	if run.Attr(names.ExitCause) != string(cause) || run.Status != span.StatusError || !strings.Contains(msg+" "+reason, want) {
		t.Errorf("run: %s %q, want cause %s naming %q: %v", run.Status, run.StatusMessage, cause, want, run.Attrs)
	}
}

func liveness(kind string) *fact.ProbeSpec {
	return &fact.ProbeSpec{Handler: fact.Handler{Kind: kind}, PeriodSeconds: 1, FailureThreshold: 2}
}

// A postStart hook that fails: the kubelet kills the container (its
// FailedPostStartHook event, or only the hook's failed exec the kernel saw)
// and starts it again. Not a completion, whatever the app's exit code.
func TestKubeletKillAfterPostStartFailure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events bool
		want   string
	}{
		{"exec hook, kernel only", false, "postStart hook exited 1"},
		{"events", true, "exited with 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			first := s.startup()
			// A later attempt whose hook fails.
			s.at(time.Second)
			s.exit("app", first, 1, 0)
			s.cri(cri.EventContainerExited, "app", 1, "Error")
			s.at(time.Second)
			app := s.container("app", "c0ffee04", 1)
			hook := s.exec("app", 99, "sh", "-c", "echo warm")
			s.at(30 * time.Millisecond)
			s.exit("app", hook, 1, 0)
			if tc.events {
				s.event("FailedPostStartHook", "app", `Exec lifecycle hook ([sh -c echo warm]) for Container "app" in Pod "web-7d9f_shop" failed - error: command 'sh -c echo warm' exited with 1: , message: ""`)
				s.event("Killing", "app", "FailedPostStartHook")
			}
			s.at(10 * time.Millisecond)
			s.gracefulStop("app", app, 30*time.Millisecond)
			s.at(300 * time.Millisecond)
			s.container("app", "c0ffee05", 2)
			s.tick(3 * time.Second)
			run := s.runOf("c0ffee04")
			wantRestart(t, run, names.CauseKubeletRestart, names.KubeletRestartPostStart)
			wantRestart(t, run, names.CauseKubeletRestart, tc.want)
		})
	}
}

// An httpGet liveness probe: the kernel sees nothing of it. Its Killing
// event comes after the runtime reported the exit (the event watch lags).
func TestHTTPProbeRestartKillingEventLate(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].Liveness = liveness("httpGet")
	app := s.startup()
	s.at(5 * time.Second)
	s.kubeletRestart(app, func() {
		s.event("Killing", "app", "Container app failed liveness probe, will be restarted")
	})
	wantRestart(t, s.runOf("c0ffee02"), names.CauseLivenessRestart, "failed liveness probe")
}

// A quiet pod's httpGet liveness restart: its event window opens only at
// the kubelet's stop (watcher.Want), and on a loaded node the window's list
// brings the Killing event after the run's settle time and after the next
// attempt. With the API server reachable, the run waits for it (at most
// kubeletEventWait) and names the event; when no event comes, the spec
// names the probe once the wait is over.
func TestHTTPProbeRestartEventAfterNextAttempt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event bool
		want  string
	}{
		{"event 3 s after the next attempt", true, "Container app failed liveness probe, will be restarted"},
		{"no event", false, "httpGet liveness probe (unseen by the kernel, no event named it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, wanted := newSimWantingEvents(t)
			s.info.Containers[0].Liveness = liveness("httpGet")
			app := s.startup()
			s.at(5 * time.Second)
			if len(*wanted) != 0 {
				t.Fatalf("events wanted for %v before the kubelet acted", *wanted)
			}
			killedAt := s.now          // the kubelet writes Killing, then stops the container
			s.kubeletRestart(app, nil) // ticks 3 s past the next attempt
			if len(*wanted) == 0 || (*wanted)[0] != s.uid {
				t.Fatalf("the runtime's stop asked for the events of %v, want pod %s", *wanted, s.uid)
			}
			if runs := s.find(names.SpanContainerRun); len(runs) != 0 {
				t.Fatalf("the restarted run was decided before the kubelet's event could come: %v", runs[0].Attrs)
			}
			if tc.event {
				s.in(fact.Input{Event: &fact.K8sEvent{UID: "ev-killing", PodUID: s.uid, Reason: "Killing", Container: "app",
					Message: "Container app failed liveness probe, will be restarted", FirstTime: killedAt, LastTime: killedAt, Count: 1}})
			}
			s.tick(4 * time.Second)
			wantRestart(t, s.runOf("c0ffee02"), names.CauseLivenessRestart, tc.want)
		})
	}
}

// The Killing event was dropped (the recorder's budget went on Unhealthy
// events): the Unhealthy events name the probe.
func TestHTTPProbeRestartOnlyUnhealthy(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].Liveness = liveness("httpGet")
	app := s.startup()
	s.at(5 * time.Second)
	for range 2 {
		s.event("Unhealthy", "app", `Liveness probe failed: Get "http://10.244.0.7:8080/healthz": dial tcp 10.244.0.7:8080: connect: connection refused`)
		s.at(time.Second)
	}
	s.kubeletRestart(app, nil)
	wantRestart(t, s.runOf("c0ffee02"), names.CauseLivenessRestart, "Liveness probe failed: Get")
}

// A tcpSocket liveness probe and no event at all: the stop with no
// termination and the new attempt say the kubelet restarted it; the spec's
// only restart it has, a probe the kernel cannot see, names why.
func TestTCPProbeRestartNoEvent(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].Liveness = liveness("tcpSocket")
	app := s.startup()
	s.at(5 * time.Second)
	s.kubeletRestart(app, nil)
	wantRestart(t, s.runOf("c0ffee02"), names.CauseLivenessRestart, "tcpSocket liveness probe")
}

// The kubelet's event budget spent before the kill (e2e 36 tcp-throttled:
// a readiness probe failing every second, many containers' Normal events):
// readiness Unhealthy events, but no liveness Unhealthy and no Killing. The
// readiness failures do not name the restart; the spec's liveness probe does.
func TestTCPProbeRestartEventsThrottled(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].Liveness = liveness("tcpSocket")
	s.info.Containers[0].Readiness = &fact.ProbeSpec{Handler: fact.Handler{Kind: "tcpSocket"}, PeriodSeconds: 1}
	app := s.startup()
	for range 20 {
		s.at(time.Second)
		s.event("Unhealthy", "app", "Readiness probe failed: dial tcp 10.0.0.1:18369: connect: connection refused")
	}
	s.at(15 * time.Second)
	s.kubeletRestart(app, nil)
	wantRestart(t, s.runOf("c0ffee02"), names.CauseLivenessRestart, "tcpSocket liveness probe")
}

// A changed definition and an in-place resize that restarts the container
// (their Killing events say so, or were dropped): kubelet restarts, errors,
// never completions.
func TestResizeAndDefinitionChangeRestarts(t *testing.T) {
	for _, tc := range []struct{ name, killing, want string }{
		{"definition", "Container app definition changed, will be restarted", names.KubeletRestartDefinition},
		{"resize", "Container app resize requires restart", names.KubeletRestartResize},
		{"resize, Killing event dropped", "", names.KubeletRestartUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(5 * time.Second)
			s.kubeletRestart(app, func() {
				if tc.killing != "" {
					s.event("Killing", "app", tc.killing)
				}
			})
			wantRestart(t, s.runOf("c0ffee02"), names.CauseKubeletRestart, tc.want)
		})
	}
}

// The kubelet evicts the pod alone (an emptyDir over its sizeLimit): no
// DisruptionTarget; its Evicted event (recorded before the stop) and a
// status Failed/Evicted with a message, written once the containers stopped
// (or while they stop) - or, as Kubernetes 1.34 did in e2e 37, phase
// Succeeded with no reason at all when the app exited 0 on SIGTERM. Grace 0:
// the kubelet still gives 2 s before SIGKILL, which is not the app's
// overrun.
func TestEmptyDirEviction(t *testing.T) {
	const msg = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	for _, tc := range []struct {
		name        string
		statusFirst bool
		eventOnly   bool // the Evicted event, no Evicted status
	}{
		{"status after the exit", false, false},
		{"status during the stop", true, false},
		{"event only, status Succeeded", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(5 * time.Second)
			if tc.eventOnly {
				s.event("Evicted", "", msg)
			}
			stopAt := s.now
			evicted := func() {
				s.info.Phase, s.info.Reason, s.info.Message = "Failed", "Evicted", msg
				if tc.eventOnly {
					s.info.Phase, s.info.Reason, s.info.Message = "Succeeded", "", ""
				}
				s.pod()
			}
			// sh as PID 1 ignores SIGTERM.
			s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionDefault)
			s.at(time.Second)
			if tc.statusFirst {
				evicted()
			}
			s.at(time.Second)
			s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
			s.exit("app", app, 0, syscall.SIGKILL)
			s.cri(cri.EventContainerExited, "app", 137, "Error")
			s.at(400 * time.Millisecond)
			if !tc.statusFirst {
				evicted()
			}
			s.at(time.Second)
			s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			if run.Attr(names.ExitCause) != string(names.CauseEvicted) {
				t.Errorf("run: %v", run.Attrs)
			}
			term := s.one(names.SpanPodTermination)
			if !term.Start.Equal(stopAt) || term.Status == span.StatusError || term.Attr(names.GracePeriodOverrun) != false ||
				term.Attr(names.TerminationReason) != "Evicted" || term.Attr(names.Message) != msg {
				t.Errorf("termination %s (stop %s): %s %q %v", term.Start, stopAt, term.Status, term.StatusMessage, term.Attrs)
			}
			stop := s.one(names.SpanContainerStop)
			if stop.Status == span.StatusError || stop.Attr(names.GracePeriodOverrun) != false {
				t.Errorf("stop: %s %q %v", stop.Status, stop.StatusMessage, stop.Attrs)
			}
		})
	}
}

// An Always pod the kubelet ends with no reason: as Kubernetes 1.34 did in
// e2e 37 (an emptyDir eviction), its app exits 0 on the runtime's SIGTERM,
// the status says phase Succeeded with no reason and no message, and the
// Evicted event may be missing (the recorder's budget of 25 per pod spent on
// MissingClusterDNS events) or come late. A restartPolicy Always pod never
// succeeds on its own: it was evicted, from the runtime's first stop signal,
// with the event's message when one came (on the run only if it came before
// the status), else a message saying the kubelet gave none. Never a
// completion, never an overrun.
func TestKubeletEndedAlwaysPodSucceeded(t *testing.T) {
	const msg = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	for _, tc := range []struct {
		name, event string // event: "", "before" the stop, "late" (after the status)
		want        string // in the messages
	}{
		{"no reason, no event", "", "without a reason"},
		{"Evicted event before the stop", "before", msg},
		{"Evicted event late", "late", msg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			s.info.RestartPolicy = "Always"
			app := s.startup()
			s.at(5 * time.Second)
			if tc.event == "before" {
				s.event("Evicted", "", msg)
			}
			stopAt := s.now
			s.gracefulStop("app", app, 30*time.Millisecond)
			s.at(400 * time.Millisecond)
			s.info.Phase = "Succeeded"
			s.pod()
			if tc.event == "late" {
				s.at(200 * time.Millisecond)
				s.event("Evicted", "", msg)
			}
			s.at(time.Second)
			s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			runWant := tc.want
			if tc.event == "late" {
				runWant = "" // the run was emitted on the status, before the event came
			}
			if m, _ := run.Attr(names.Message).(string); run.Attr(names.ExitCause) != string(names.CauseEvicted) || !strings.Contains(m, runWant) {
				t.Errorf("run: %v", run.Attrs)
			}
			term := s.one(names.SpanPodTermination)
			m, _ := term.Attr(names.Message).(string)
			if !term.Start.Equal(stopAt) || term.Status == span.StatusError || term.Attr(names.GracePeriodOverrun) != false ||
				term.Attr(names.TerminationReason) != "Evicted" || !strings.Contains(m, tc.want) {
				t.Errorf("termination %s (stop %s): %s %q %v", term.Start, stopAt, term.Status, term.StatusMessage, term.Attrs)
			}
		})
	}
}

// A forced deletion: the pod's object is gone while its container still
// runs. The trace stays open, so the model asks for the pod's Events
// (watcher.Want keeps a window on a gone pod only when asked); a deletion
// with nothing left running asks for nothing.
func TestForcedDeletionWantsEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool
	}{{"container still running", true}, {"nothing running", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s, wanted := newSimWantingEvents(t)
			app := s.startup()
			s.at(5 * time.Second)
			if !tc.running {
				s.exit("app", app, 0, syscall.SIGTERM)
				s.at(time.Second)
			}
			*wanted = nil
			s.info.Deleted = true
			s.pod()
			s.tick(time.Second)
			switch {
			case tc.running && (len(*wanted) != 1 || (*wanted)[0] != s.uid):
				t.Fatalf("object gone, container running: events wanted for %v, want pod %s once", *wanted, s.uid)
			case !tc.running && len(*wanted) != 0:
				t.Fatalf("object gone, nothing running: events wanted for %v", *wanted)
			}
			if root := s.find(names.SpanPod); tc.running == (len(root) != 0) {
				t.Errorf("root spans %d with the container running=%v", len(root), tc.running)
			}
		})
	}
}

// newSimWantingEvents is newSim with the API server up and a model that
// records the pods whose events it asks for (Config.WantEvents).
func newSimWantingEvents(t *testing.T) (*sim, *[]string) {
	t.Helper()
	s := newSim(t)
	wanted := &[]string{}
	s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: s.o, StuckAfter: 10 * time.Second,
		Sink:       span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) }),
		WantEvents: func(uid string) { *wanted = append(*wanted, uid) }})
	s.in(fact.Input{API: &fact.APIStatus{Available: true, Since: s.now}})
	return s, wanted
}
