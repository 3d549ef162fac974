package correlate

import (
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
)

// session is a process started in a container from outside it after its
// init: a lifecycle hook, an exec probe or a kubectl exec.
type session struct {
	pid   uint32
	args  []string
	start time.Time
	kind  string // poststart, prestop, probe.startup, probe.readiness, probe.liveness, exec
}

// containerSessions: a container's live and finished exec sessions, and
// the session spans per kind within their cap (bounds.go).
type containerSessions struct {
	sessions       map[uint32]*session
	doneSessions   []doneSession
	sessionSpans   map[string]int
	sessionsFolded map[string]int
	sessionKeys    []string // the session spans' keys (attempts.go forgets them)
}

type doneSession struct {
	s *session
	e *kernel.ExitEvent
}

// sessionKind matches an exec session's argv to the pod spec's hooks and probes.
func (c *Correlator) sessionKind(ct *container, args []string) string {
	if ct.pod == nil {
		return names.SessionExec
	}
	spec, _ := ct.pod.spec(ct.name)
	if spec == nil {
		return names.SessionExec
	}
	match := func(h *fact.Handler) bool {
		return h != nil && h.Kind == "exec" && len(h.Exec) > 0 && argsMatch(h.Exec, args)
	}
	switch {
	case spec.PreStop != nil && match(spec.PreStop) && !ct.pod.terminating.IsZero():
		return names.SessionPreStop
	case spec.PostStart != nil && match(spec.PostStart):
		return names.SessionPostStart
	case spec.Startup != nil && match(&spec.Startup.Handler):
		// The docs' pattern: startup and liveness probes share a command.
		// The startup probe runs until the container is Started, the
		// liveness probe after.
		if spec.Liveness != nil && match(&spec.Liveness.Handler) && ct.pod.containerStarted(ct.name) {
			return names.SessionProbeLiveness
		}
		return names.SessionProbeStartup
	case spec.Liveness != nil && match(&spec.Liveness.Handler):
		if spec.Readiness != nil && match(&spec.Readiness.Handler) && !ct.pod.startupDone {
			return names.SessionProbeReadiness
		}
		return names.SessionProbeLiveness
	case spec.Readiness != nil && match(&spec.Readiness.Handler):
		return names.SessionProbeReadiness
	case spec.PreStop != nil && match(spec.PreStop):
		return names.SessionPreStop
	}
	return names.SessionExec
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

// containerStarted reports the API's ContainerStatus.Started of a
// container (its startup probe passed, or it has none).
func (p *pod) containerStarted(name string) bool {
	if p.info == nil {
		return false
	}
	for _, st := range p.info.Statuses {
		if st.Name == name && st.Started != nil {
			return *st.Started
		}
	}
	return false
}
