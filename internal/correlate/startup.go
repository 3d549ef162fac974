package correlate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/names"
)

// Start-ups that end without Ready. A pod that never becomes Ready (an
// image that can't be pulled, a missing ConfigMap, an init container in a
// crash loop, a readiness probe that never passes) still gets its
// pod.startup, as an ERROR saying what it waits for, when:
//   - its termination begins (deletion, eviction, a kubelet-initiated stop);
//   - it reaches a terminal phase (Failed; Succeeded is a pod that finished
//     its work before it was ever Ready: not an error);
//   - it is gone;
//   - or Config.StartupTimeout passed since it was created (the give-up
//     time; a later Ready shows as an event on the root).

// startupOutcome says how a start-up ended when not by Ready.
type startupOutcome struct {
	outcome   string // ready (empty), gave_up, terminated, failed, completed, gone
	failure   string // the status message; empty: not an error
	container string // the container it waited for, if one
	reason    string // that container's waiting reason (ImagePullBackOff, ...)
}

// podStartup: the start-up, from the pod's creation to Ready (or to giving
// up).
type podStartup struct {
	pulls         map[string]*pull
	startupDone   bool
	startupSettle time.Time
	// readySeen is when the API server's Ready=True was first seen;
	// readyAt the ready time the start-up span ends at. readyEvidence holds
	// the kernel times of what makes a pod ready (a passing readiness or
	// startup probe, a postStart hook's end, an app container's exec):
	// the API's condition time has whole seconds, the kernel's do not.
	readySeen     time.Time
	readyAt       time.Time
	readyEvidence []time.Time
	readyAt0      time.Time // the Ready condition's time when first seen
	gaveUpAt      time.Time // the start-up ended without Ready
	lateReady     bool      // Ready came after gaveUpAt (noted on the root)
	// lastWaiting: each container's last telling waiting reason.
	lastWaiting map[string]fact.Waiting
	// resumed: first seen after its start-up (resume.go): none is decided.
	resumed bool
}

// pull is a container image's pull, from the kubelet's Events, or an
// image volume's (volume set, container empty).
type pull struct {
	container  string
	volume     string // an image volume's name (pullKey)
	image      string // the image volume's reference
	start, end time.Time
	message    string
	// A failed pull: the kubelet's reason (ErrImagePull, ImagePullBackOff,
	// ErrImageNeverPull, ...), its message, and the last failure's time.
	reason, failure string
	failedAt        time.Time
}

// startupStart is when the pod's start-up began.
func (p *pod) startupStart() time.Time {
	start := p.firstSeen
	if p.info != nil && !p.info.CreatedAt.IsZero() {
		start = p.info.CreatedAt
	}
	return earliest(start, p.sandboxCreated)
}

// giveUpStartups ends the start-ups that will not see Ready (see above).
func (c *Correlator) giveUpStartups() {
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		p := c.pods[uid]
		if p.startupDone || p.finished || p.info == nil || !p.readySeen.IsZero() ||
			!p.startupSettle.IsZero() && c.now.Before(p.startupSettle) {
			continue // done, or settling on a Ready already seen
		}
		if c.endStartupByPhase(p, false) {
			continue
		}
		if c.cfg.StartupTimeout > 0 && c.now.Sub(p.startupStart()) > c.cfg.StartupTimeout {
			c.endStartupUnready(p, c.now, names.StartupGaveUp, "not Ready after "+c.cfg.StartupTimeout.String())
		}
	}
}

// endStartupByPhase ends a start-up that will not see Ready because the pod
// is terminating or in a terminal phase, and says whether it did. A pod
// that ends (finishPod) before the next tick saw its phase is decided here
// too, not read as gone; then (atEnd) a pod whose facts make it Succeeded
// (completedWork) completed, though the API server's phase did not come
// before its sandbox went (seen under load, e2e 10c, 2026-11-28).
func (c *Correlator) endStartupByPhase(p *pod, atEnd bool) bool {
	switch {
	case p.info == nil:
		return false
	case !p.terminating.IsZero():
		c.endStartupUnready(p, p.terminating, names.StartupTerminated, "terminating before Ready")
	case p.info.Phase == "Failed":
		c.endStartupUnready(p, c.lastExit(p, c.now), names.StartupFailed, "pod failed before Ready")
	case p.info.Phase == "Succeeded" || atEnd && p.completedWork():
		c.endStartupUnready(p, c.lastExit(p, c.now), names.StartupCompleted, "")
	default:
		return false
	}
	return true
}

// completedWork: the pod's facts make it Succeeded before the API server
// says so (the kubelet's rule): it restarts no container that exits 0
// (restartPolicy Never or OnFailure) and every app container's last run
// exited 0 (an OnFailure pod's earlier failed runs were restarted).
func (p *pod) completedWork() bool {
	if p.info == nil || p.info.RestartPolicy != "Never" && p.info.RestartPolicy != "OnFailure" || len(p.info.Containers) == 0 {
		return false
	}
	for _, spec := range p.info.Containers {
		done := false
		for _, ct := range p.containers {
			if ct.name != spec.Name || ct.sandbox || ct.nextAttempt() != nil {
				continue
			}
			if !ct.exited || ct.exitCode != 0 {
				return false
			}
			done = true
		}
		if !done {
			return false
		}
	}
	return true
}

// endStartupUnready ends a start-up without Ready at end, with its outcome
// (gave_up, terminated, failed, gone, completed) and why; why empty means
// the pod completed its work without ever being Ready (a Job's pod).
func (c *Correlator) endStartupUnready(p *pod, end time.Time, outcome, why string) {
	if p.startupDone {
		return
	}
	start := p.startupStart()
	if !p.observedFrom.IsZero() && p.info == nil {
		// Alive before the tracer and no API server to say whether it
		// was Ready: an earlier instance may have reported its start-up.
		p.startupDone = true
		return
	}
	if end.Before(start) {
		end = start
	}
	if why == "" {
		c.emitStartup(p, end, startupOutcome{outcome: outcome})
		return
	}
	out := startupOutcome{outcome: outcome, failure: why}
	if ctr, reason, msg := p.blockedOn(); ctr != "" {
		out.container, out.reason = ctr, reason
		what := "container " + ctr
		if vol, ok := strings.CutPrefix(ctr, volumePullKey); ok {
			out.container, what = "", "image volume "+vol
		}
		out.failure = fmt.Sprintf("%s: %s: %s", why, what, reason)
		if msg != "" {
			out.failure += ": " + msg
		}
	} else if gates := p.gatesNotTrue(); gates != "" {
		out.reason = waitingGateReason
		out.failure = fmt.Sprintf("%s: readiness gate %s not True", why, gates)
	}
	c.emitStartup(p, end, out)
	p.gaveUpAt = end
}

// blockedOn names the container the start-up waits for, from the API's
// container statuses (init containers first): one waiting for a reason
// other than being created, one that terminated with an error, or one
// running but not ready.
func (p *pod) blockedOn() (container, reason, message string) {
	if p.info == nil {
		return "", "", ""
	}
	all := p.statuses()
	for _, st := range all {
		if w := st.State.Waiting; w != nil && telling(w.Reason) {
			return st.Name, w.Reason, w.Message
		}
	}
	// The status at the end may no longer say it (a deletion resets it):
	// the last telling reason seen.
	for _, name := range slices.Sorted(maps.Keys(p.lastWaiting)) {
		ran := false
		for _, st := range all {
			ran = ran || st.Name == name && (st.State.Running != nil || st.State.Terminated != nil)
		}
		if !ran {
			w := p.lastWaiting[name]
			return name, w.Reason, w.Message
		}
	}
	for _, st := range all {
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
			return st.Name, "Terminated", fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
		}
	}
	for _, st := range p.info.Statuses {
		if st.State.Running != nil && !st.Ready {
			return st.Name, "NotReady", "running, readiness not passed"
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.pulls)) {
		if pl := p.pulls[name]; pl.end.IsZero() && pl.failure != "" {
			return name, pl.reason, pl.failure
		}
	}
	return "", "", ""
}

// telling: a waiting reason that says why a container does not run (not
// the normal ContainerCreating / PodInitializing).
func telling(reason string) bool {
	return reason != "" && reason != "ContainerCreating" && reason != "PodInitializing"
}

// noteWaiting remembers each container's last telling waiting reason.
func (p *pod) noteWaiting() {
	if p.info == nil {
		return
	}
	for _, st := range p.statuses() {
		if w := st.State.Waiting; w != nil && telling(w.Reason) {
			if p.lastWaiting == nil {
				p.lastWaiting = map[string]fact.Waiting{}
			}
			p.lastWaiting[st.Name] = *w
		}
	}
}

// lastExit is the latest exit of the pod's app and init containers, or at.
func (c *Correlator) lastExit(p *pod, at time.Time) time.Time {
	var last time.Time
	for _, ct := range p.containers {
		if !ct.sandbox && ct.exited {
			last = latest(last, ct.exitAt)
		}
	}
	if last.IsZero() {
		return at
	}
	return last
}

// pullFailure tells a kubelet event about a failed image pull, and the
// kubelet's reason when the message carries it.
func pullFailure(msg string) (reason string, ok bool) {
	switch {
	case strings.HasPrefix(msg, "Failed to pull image"):
		return "ErrImagePull", true
	case strings.HasPrefix(msg, "Back-off pulling image"):
		return "ImagePullBackOff", true
	case strings.Contains(msg, "is not present with pull policy of Never"):
		return "ErrImageNeverPull", true
	case msg == "Error: ErrImagePull", msg == "Error: ImagePullBackOff", msg == "Error: ErrImageNeverPull",
		msg == "Error: InvalidImageName", strings.HasPrefix(msg, "Failed to apply default image tag"):
		return strings.TrimPrefix(msg, "Error: "), true
	}
	return "", false
}
