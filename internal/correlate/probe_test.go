package correlate_test

import (
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/names"
)

// The Kubernetes docs' pattern: a startup probe and a liveness probe with
// the same command. Until the container is Started the runs are the startup
// probe's; a restart after its failures has its own cause, told by the
// kernel's failed probes and the runtime's SIGTERM (no Killing event: the
// client's spam filter may drop it).
func TestStartupAndLivenessShareACommand(t *testing.T) {
	check := []string{"cat", "/tmp/healthy"}
	setup := func(t *testing.T) (*sim, uint32) {
		s := newSim(t)
		s.info.InitContainers = nil
		s.info.Containers[0].Readiness = nil
		s.info.Containers[0].Startup = &fact.ProbeSpec{Handler: fact.Handler{Kind: "exec", Exec: check}}
		s.info.Containers[0].Liveness = &fact.ProbeSpec{Handler: fact.Handler{Kind: "exec", Exec: check}}
		s.sandboxUp()
		app := s.container("app", "c0ffee02", 0)
		return s, app
	}
	probeRun := func(s *sim, code int) {
		s.at(time.Second)
		pr := s.exec("app", 99, check...)
		s.at(5 * time.Millisecond)
		s.exit("app", pr, code, 0)
	}
	t.Run("fails before Started", func(t *testing.T) {
		s, app := setup(t)
		probeRun(s, 1)
		probeRun(s, 1)
		s.at(50 * time.Millisecond)
		s.gracefulStop("app", app, 20*time.Millisecond)
		s.tick(3 * time.Second)
		if got := s.one(names.SpanContainerRun).Attr(names.ExitCause); got != string(names.CauseStartupProbeRestart) {
			t.Errorf("cause %v, want startup_probe_restart", got)
		}
		if n := len(s.find(names.SessionProbeStartup)); n != 2 {
			t.Errorf("%d probe.startup spans, want 2", n)
		}
	})
	t.Run("fails after Started", func(t *testing.T) {
		s, app := setup(t)
		probeRun(s, 0)
		started := true
		s.info.Statuses = []fact.ContainerStatus{{Name: "app", Started: &started, Ready: true,
			State: fact.ContainerState{Running: &fact.Running{StartedAt: s.now}}}}
		s.pod()
		s.cond("Ready")
		s.tick(2 * time.Second)
		probeRun(s, 1)
		probeRun(s, 1)
		s.at(50 * time.Millisecond)
		s.gracefulStop("app", app, 20*time.Millisecond)
		s.tick(3 * time.Second)
		if got := s.one(names.SpanContainerRun).Attr(names.ExitCause); got != string(names.CauseLivenessRestart) {
			t.Errorf("cause %v, want liveness_restart", got)
		}
		if n := len(s.find(names.SessionProbeLiveness)); n != 2 {
			t.Errorf("%d failed probe.liveness spans, want 2", n)
		}
	})
}
