package correlate_test

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

func (o *obs) OOMKillMisreported(ns, reason string) {
	o.calls = append(o.calls, "oom misreported "+ns+" "+reason)
}

// misreports returns the root's podchron.oom_kill.misreported events.
func misreports(root span.Span) []span.SpanEvent { return eventsNamed(root, names.EventOOMMisreported) }

// appTerminated is the kubelet's status of app's run ended with reason.
func (s *sim) appTerminated(code int32, reason string) {
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: s.ids["app"],
		State: fact.ContainerState{Terminated: &fact.Terminated{ContainerID: s.ids["app"], ExitCode: code, Reason: reason, FinishedAt: s.now}}}}
	s.pod()
}

// The kernel OOM-kills app's init; the runtime's reason for its end comes
// when the test says (before the run's span is due, after it, or never:
// the kubelet's status alone), then the pod is deleted and gone. before:
// the misreports counted before the deletion.
func (s *sim) oomKilledApp(runtimeReason string, late bool, apiReason string) (run, root span.Span, before int) {
	s.t.Helper()
	app := s.startup()
	s.at(time.Second)
	s.oomKill("app", app, "app", memcgs(1, 0, 0, 0, 0)...)
	s.exit("app", app, 0, syscall.SIGKILL)
	if runtimeReason != "" && !late {
		s.cri(cri.EventContainerExited, "app", 137, runtimeReason)
	}
	s.tick(3 * time.Second) // the settle time passed: the run is out
	if runtimeReason != "" && late {
		s.cri(cri.EventContainerExited, "app", 137, runtimeReason)
	}
	if apiReason != "" {
		s.appTerminated(137, apiReason)
		s.at(time.Second)
		s.appTerminated(137, apiReason) // the same status again
	}
	for _, c := range s.o.calls {
		if strings.HasPrefix(c, "oom misreported") {
			before++
		}
	}
	s.deleteNow()
	s.gone()
	s.tick(3 * time.Second)
	return s.one(names.SpanContainerRun), s.one("pod"), before
}

// When the kernel OOM-killed a container's init and the kubelet's reason
// says otherwise (containerd missed the OOM event: Error, exit 137), the
// run's cause stays the kernel's, the root tells the disagreement once,
// with the kubelet's reason, in an event and its verdict, and the metric
// counts it; whether the reason came before the run's span or after it, from
// the runtime or from the API status.
func TestOOMKillTheKubeletReportedOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name             string
		runtime          string
		late             bool
		api              string
		want             string // the kubelet's reason told, "" for none
		runReasonWritten bool   // the run's span carries it
	}{
		{name: "runtime's Error in time", runtime: "Error", want: "Error", runReasonWritten: true},
		{name: "runtime's Error after the run", runtime: "Error", late: true, want: "Error"},
		{name: "the API status's only", api: "Error", want: "Error"},
		{name: "runtime's OOMKilled", runtime: "OOMKilled", api: "OOMKilled", runReasonWritten: true},
		{name: "runtime's OOMKilled after the run", runtime: "OOMKilled", late: true},
		{name: "no reason ever"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			run, root, before := s.oomKilledApp(tc.runtime, tc.late, tc.api)
			if c := run.Attr(names.ExitCause); c != string(names.CauseOOMKilled) {
				t.Errorf("run's cause %v, want the kernel's oom_killed", c)
			}
			if r := run.Attr(names.K8sContainerStatusLastTerminatedReason); (r != nil) != tc.runReasonWritten {
				t.Errorf("run's %s = %v, want it written: %v", names.K8sContainerStatusLastTerminatedReason, r, tc.runReasonWritten)
			}
			evs := misreports(root)
			verdict, _ := root.Attr(names.Verdict).(string)
			metric := "oom misreported shop " + tc.want
			if tc.want == "" {
				if len(evs) != 0 || strings.Contains(verdict, "the kubelet said") {
					t.Errorf("a misreport told: %v, verdict %q", evs, verdict)
				}
				for _, c := range s.o.calls {
					if strings.HasPrefix(c, "oom misreported") {
						t.Errorf("metric: %q", c)
					}
				}
				return
			}
			if len(evs) != 1 {
				t.Fatalf("%d %s events on the root, want 1: %+v", len(evs), names.EventOOMMisreported, root.Events)
			}
			ev := evs[0]
			if got := span.Lookup(ev.Attrs, names.K8sContainerStatusLastTerminatedReason); got != tc.want ||
				span.Lookup(ev.Attrs, names.K8sContainerName) != "app" || span.Lookup(ev.Attrs, names.ContainerID) != s.ids["app"] ||
				span.Lookup(ev.Attrs, names.OOMScope) != names.OOMScopeContainer || !ev.Time.Equal(run.End) {
				t.Errorf("event %v at %v: want app's reason %s, scope container, at the run's end %v", ev.Attrs, ev.Time, tc.want, run.End)
			}
			if want := regexp.MustCompile(`(^|; )app: OOM-killed[^;]*, the kubelet said ` + tc.want + `(;|$)`); !want.MatchString(verdict) {
				t.Errorf("root verdict %q does not match %s", verdict, want)
			}
			if n := s.o.count(metric); n != 1 || before != 1 {
				t.Errorf("metric %q counted %d times, %d of them before the deletion; want 1, when the reason came", metric, n, before)
			}
		})
	}
}

// A kubelet's Error for a container the kernel did not OOM-kill (an OOM
// kill of a child only, the init then exited on its own) is no misreport:
// the runtime's reason agrees with the init's exit.
func TestAChildsOOMKillIsNoMisreport(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	child := s.exec("app", app, "dd", "bs=256M")
	s.oomKill("app", child, "dd", memcgs(1, 0, 0, 0, 0)...)
	s.exit("app", child, 0, syscall.SIGKILL)
	s.at(time.Second)
	s.exit("app", app, 1, 0)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.tick(3 * time.Second)
	s.appTerminated(1, "Error")
	s.deleteNow()
	s.gone()
	s.tick(3 * time.Second)
	if evs := misreports(s.one("pod")); len(evs) != 0 {
		t.Errorf("misreport told for a child's OOM kill: %v", evs)
	}
	if c := s.one(names.SpanContainerRun).Attr(names.ExitCause); c != string(names.CauseError) {
		t.Errorf("run's cause %v, want error", c)
	}
}
