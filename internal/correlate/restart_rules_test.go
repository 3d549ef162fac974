package correlate_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// Container restart rules (Kubernetes 1.34+, restartPolicyRules) and the
// in-place restart of a whole pod (1.35+, RestartAllContainers), driven
// with the facts a node gives: the exit code (kernel, runtime), the rule in
// the spec, the runtime's stops, the new attempts, the pod's conditions.

// withRules gives the app container its own restart policy and rules.
func (s *sim) withRules(policy string, rules ...fact.RestartRule) {
	for i := range s.info.Containers {
		if s.info.Containers[i].Name == "app" {
			s.info.Containers[i].RestartPolicy = policy
			s.info.Containers[i].RestartRules = rules
		}
	}
}

// A container whose exit matches its Restart rule: the kubelet restarts it
// whatever the restart policy says (here Never). Its run's cause is
// restart_rule, naming the rule; an ERROR for a non-zero exit, not for an
// exit 0 its rule restarts on.
func TestRestartRuleRestartsContainer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		rule   fact.RestartRule
		status span.Status
	}{
		{"exit 42 In [42]", 42, fact.RestartRule{Action: fact.RestartRuleRestart, Operator: "In", ExitCodes: []int32{42}}, span.StatusError},
		{"exit 0 NotIn [1,2]", 0, fact.RestartRule{Action: fact.RestartRuleRestart, Operator: "NotIn", ExitCodes: []int32{1, 2}}, span.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			s.info.RestartPolicy = "Never"
			s.withRules("Never", fact.RestartRule{Action: fact.RestartRuleRestart, Operator: "In", ExitCodes: []int32{7}}, tc.rule)
			app := s.startup()
			s.tick(time.Minute)
			s.exit("app", app, tc.code, 0)
			s.cri(cri.EventContainerExited, "app", int32(tc.code), "Error")
			s.at(300 * time.Millisecond)
			s.container("app", "c0ffee03", 1)
			s.tick(3 * time.Second)
			run := s.runOf("c0ffee02")
			if got := run.Attr(names.ExitCause); got != string(names.CauseRestartRule) {
				t.Fatalf("cause %v, want %s: %v", got, names.CauseRestartRule, run.Attrs)
			}
			if got, want := run.Attr(names.RestartRule), tc.rule.String(); got != want {
				t.Errorf("%s = %v, want %q (the first rule that matches)", names.RestartRule, got, want)
			}
			if run.Status != tc.status {
				t.Errorf("status %s %q, want %s", run.Status, run.StatusMessage, tc.status)
			}
		})
	}
}

// An exit no rule matches is decided as before, and a rule does not turn
// the kubelet's own stop (a liveness restart, the pod's termination) into
// the container's exit.
func TestRestartRuleOnlyForItsOwnExit(t *testing.T) {
	s := newSim(t)
	s.withRules("Always", fact.RestartRule{Action: fact.RestartRuleRestart, Operator: "In", ExitCodes: []int32{0, 3}})
	app := s.startup()
	s.tick(time.Minute)
	s.exit("app", app, 5, 0)
	s.cri(cri.EventContainerExited, "app", 5, "Error")
	s.at(300 * time.Millisecond)
	app2 := s.container("app", "c0ffee03", 1)
	s.tick(3 * time.Second)
	if got := s.runOf("c0ffee02").Attr(names.ExitCause); got != string(names.CauseError) {
		t.Errorf("exit 5 (no rule): cause %v, want error", got)
	}
	s.deleteWith(30)
	s.gracefulStop("app", app2, 100*time.Millisecond) // exit 0, which a rule matches, after the stop
	s.gone()
	s.tick(3 * time.Second)
	run := s.runOf("c0ffee03")
	if got := run.Attr(names.ExitCause); got == string(names.CauseRestartRule) || run.Attr(names.RestartRule) != nil {
		t.Errorf("a stop of the pod's termination read as the rule: %v", run.Attrs)
	}
}

// RestartAllContainers: a sidecar-like watcher exits 88, its rule restarts
// the whole pod in place: the kubelet stops the app (no preStop, no
// termination), runs the init container again and starts both anew in the
// same sandbox; the pod is Ready again. The trace: the watcher's run ends
// as restart_rule, the app's as kubelet_restart (restart_all_containers),
// one pod.restart span from the watcher's exit until Ready again with the
// init container's second run under it, and no termination.
func TestRestartAllContainersInPlace(t *testing.T) {
	s := newSim(t)
	s.info.Containers = append(s.info.Containers, fact.ContainerSpec{Name: "watcher", RestartPolicy: "Never",
		RestartRules: []fact.RestartRule{{Action: fact.RestartRuleRestartAll, Operator: "In", ExitCodes: []int32{88}}}})
	app := s.startup()
	watcher := s.container("watcher", "c0ffee0a", 0)
	s.tick(time.Minute)

	s.exit("watcher", watcher, 88, 0)
	trigger := s.now
	s.cri(cri.EventContainerExited, "watcher", 88, "Error")
	s.at(100 * time.Millisecond)
	s.setCond("AllContainersRestarting", "True", s.now)
	s.pod()
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.at(20 * time.Millisecond)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.at(200 * time.Millisecond)
	s.setCond("AllContainersRestarting", "False", s.now)
	s.setCond("Ready", "False", s.now)
	s.pod()
	init2 := s.container("migrate", "c0ffee11", 1)
	s.at(400 * time.Millisecond)
	s.exit("migrate", init2, 0, 0)
	s.cri(cri.EventContainerExited, "migrate", 0, "Completed")
	s.container("app", "c0ffee12", 1)
	s.container("watcher", "c0ffee1a", 1)
	s.at(time.Second)
	s.setCond("Ready", "True", s.now)
	s.pod()
	ready := s.now
	s.tick(3 * time.Second)

	if got := s.runOf("c0ffee0a").Attr(names.ExitCause); got != string(names.CauseRestartRule) {
		t.Errorf("watcher's run: cause %v, want restart_rule", got)
	}
	appRun := s.runOf("c0ffee02")
	if appRun.Attr(names.ExitCause) != string(names.CauseKubeletRestart) || appRun.Attr(names.KubeletRestartReason) != names.KubeletRestartAllContainers {
		t.Errorf("app's run: %v, want kubelet_restart / %s", appRun.Attrs, names.KubeletRestartAllContainers)
	}
	if msg, _ := appRun.Attr(names.Message).(string); !strings.Contains(msg, "container watcher exited 88") {
		t.Errorf("app's run message %q does not name the trigger", msg)
	}
	r := s.one(names.SpanPodRestart)
	if !r.Start.Equal(trigger) || r.End.Before(ready.Truncate(time.Second)) || r.Status == span.StatusError {
		t.Errorf("pod.restart %s..%s %s, want from the trigger %s until Ready again (%s)", r.Start, r.End, r.Status, trigger, ready)
	}
	var initRun span.Span
	for _, sp := range s.find(names.SpanContainerInit) {
		if sp.Attr(names.ContainerID) == "c0ffee11" {
			initRun = sp
		}
	}
	if initRun.Parent != r.SpanID {
		t.Errorf("the init container's second run is under %s, want the pod.restart span\n%s", s.byID(initRun.Parent), render(s.spans))
	}
	for _, b := range s.find(names.SpanContainerBackoff) {
		if !b.End.Before(trigger) {
			t.Errorf("a back-off in the in-place restart: %v", b.Attrs)
		}
	}
	if n := len(s.find(names.SpanPodTermination)); n != 0 {
		t.Errorf("%d terminations for an in-place restart", n)
	}
}
