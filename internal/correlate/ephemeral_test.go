package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// debugSession: kubectl debug adds an ephemeral container to the running
// pod; someone works in it for a while and leaves with Ctrl-D after a
// failed command (exit 130).
func debugSession(s *sim) {
	s.info.EphemeralContainers = []string{"debugger-x7k2p"}
	s.pod()
	s.at(time.Second)
	sh := s.container("debugger-x7k2p", "dbg00001", 0)
	s.at(20 * time.Second)
	s.exit("debugger-x7k2p", sh, 130, 0)
	s.cri(cri.EventContainerExited, "debugger-x7k2p", 130, "Error")
	s.tick(3 * time.Second)
}

// A debug container after start-up: its own span kind, OK whatever its
// exit, no app exit measured, the start-up untouched.
func TestEphemeralContainerIsItsOwnSpan(t *testing.T) {
	s := newSim(t)
	s.startup()
	calls := len(s.o.calls)
	debugSession(s)
	dbg := s.one(names.SpanContainerEphemeral)
	if dbg.Status != span.StatusOK || dbg.Attr(names.K8sContainerName) != "debugger-x7k2p" || dbg.Attr(names.ProcessExitCode) != int64(130) {
		t.Errorf("ephemeral span: %v %q %v", dbg.Status, dbg.StatusMessage, dbg.Attrs)
	}
	for _, r := range s.find(names.SpanContainerRun) {
		if r.Attr(names.K8sContainerName) == "debugger-x7k2p" {
			t.Errorf("the debug container as an app container: %v", r.Attrs)
		}
	}
	if slices.ContainsFunc(s.o.calls[calls:], func(c string) bool { return strings.HasPrefix(c, "exit ") }) {
		t.Errorf("the debug session's end measured as a container exit: %v", s.o.calls[calls:])
	}
	if n := len(s.find(names.SpanPodStartup)); n != 1 {
		t.Errorf("%d start-ups", n)
	}
}

// A debug container started while the pod is not Ready yet is no part of
// its start-up: no container.start for it, no start-up phase from it.
func TestEphemeralContainerOutsideStartup(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.sandboxUp()
	s.container("app", "c0ffee02", 0)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", State: fact.ContainerState{Running: &fact.Running{StartedAt: s.now}}}}
	s.pod()
	s.at(30 * time.Second)
	debugSession(s)
	s.cond("ContainersReady")
	s.cond("Ready")
	s.tick(3 * time.Second)
	for _, st := range s.find(names.SpanContainerStart) {
		if st.Attr(names.K8sContainerName) == "debugger-x7k2p" {
			t.Errorf("the debug container's start in the start-up: %v", st.Attrs)
		}
	}
	if n := len(s.find(names.SpanContainerEphemeral)); n != 1 {
		t.Errorf("%d ephemeral spans\n%s", n, render(s.spans))
	}
}

// A Job's pod with a native sidecar: once the app is done the kubelet
// stops the sidecar, a completion, though a debug container still runs.
func TestEphemeralContainerDoesNotHoldJobCompletion(t *testing.T) {
	s := newSim(t)
	s.info.OwnerKind, s.info.RestartPolicy = "Job", "Never"
	s.info.InitContainers = []fact.ContainerSpec{{Name: "proxy", Sidecar: true}}
	s.info.Containers = []fact.ContainerSpec{{Name: "app"}}
	s.info.EphemeralContainers = []string{"debugger-x7k2p"}
	s.sandboxUp()
	proxy := s.container("proxy", "c0ffee01", 0)
	app := s.container("app", "c0ffee02", 0)
	s.container("debugger-x7k2p", "dbg00001", 0)
	s.at(10 * time.Second)
	s.exit("app", app, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.at(100 * time.Millisecond)
	s.gracefulStop("proxy", proxy, 50*time.Millisecond)
	s.tick(3 * time.Second)
	// The sidecar's stop is the Job's completion: the pod's termination
	// begins (its start-up, never Ready, ends there), not a restart of
	// the sidecar.
	st := s.find(names.SpanPodStartup)
	if len(st) != 1 || st[0].Attr(names.StartupOutcome) != "terminated" {
		t.Errorf("the sidecar's stop did not begin the Job pod's termination:\n%s", render(s.spans))
	}
}
