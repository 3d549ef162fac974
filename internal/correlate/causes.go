// Why a container's init ended: the exit cause and its evidence.

package correlate

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"
)

// containerProbes: a container's failed probes, as the kernel saw its exec
// probes end and as the kubelet's Unhealthy events say.
type containerProbes struct {
	// lastLivenessFail is when a liveness probe last failed (kernel view).
	lastLivenessFail time.Time
	lastStartupFail  time.Time // when a startup probe last failed (kernel view)
	// postStartFailed: when its exec postStart hook failed (kernel view),
	// and its exit code.
	postStartFailed  time.Time
	postStartExit    int
	probeFails       []span.SpanEvent
	probeFailsFolded int
}

// cause explains why a container's init process ended.
func (c *Correlator) cause(ct *container) (names.Cause, []span.Attr) {
	p := ct.pod
	var attrs []span.Attr
	if ct.unknownExit {
		return names.CauseUnknown, []span.Attr{span.String(names.Message, "removed before its exit was seen (kernel events lost or the tracer started late)")}
	}
	// The OOM kill is the cause when it killed the init (the kernel's view),
	// or when the runtime says OOMKilled and the kernel saw no OOM kill at
	// all (lost, or before the tracer). The runtime's reason alone is not
	// enough: it says OOMKilled for a child's OOM kill too.
	if ct.oom != nil || ct.reason == cri.ReasonOOMKilled && len(ct.ooms) == 0 {
		if ct.oom != nil {
			attrs = append(attrs, span.Int(names.OOMVictimPID, int64(ct.oom.VictimTGID)),
				span.String(names.OOMVictimComm, ct.oom.VictimComm), span.String(names.OOMScope, ct.oomScope))
			if ct.oomMemcg != "" {
				attrs = append(attrs, span.String(names.OOMMemcg, ct.oomMemcg))
			}
			if ct.oom.HasRSS {
				attrs = append(attrs, span.Int(names.OOMAnonRSSKB, int64(ct.oom.AnonRSSKB)))
			}
		}
		return names.CauseOOMKilled, attrs
	}
	if cause, a := c.livenessCause(ct); cause != "" {
		return cause, a
	}
	if cause, a := ct.disruptionCause(); cause != "" {
		return cause, a
	}
	if cause, a := c.kubeletCause(ct); cause != "" {
		return cause, a
	}
	if cause, a := c.restartRuleCause(ct); cause != "" {
		return cause, a
	}
	if ct.exitSignal == 0 {
		if cause, a := p.evictedExit(); cause != "" {
			return cause, a
		}
		if ct.exitCode == 0 {
			return names.CauseCompleted, nil
		}
		if stop := ct.stopSignal(); stop != nil && stop.at.Before(ct.exitAt) && gracefulExit(ct.exitCode, stop.sig) {
			// The app handled the stop signal and exited the way shells and
			// many runtimes report it (128+signal): a graceful stop.
			return names.CauseCompleted, []span.Attr{span.String(names.Message, fmt.Sprintf("exit code %d after %s from the %s: a graceful stop",
				ct.exitCode, kernel.SignalName(stop.sig), stop.senderKind))}
		}
		return names.CauseError, nil
	}
	sig := ct.signalOf(ct.exitSignal)
	if sig == nil && ct.exitSignal == syscall.SIGTERM {
		sig = ct.signalOf(syscall.SIGTERM)
	}
	if sig != nil {
		attrs = append(attrs, span.String(names.SignalSenderKind, string(sig.senderKind)),
			span.String(names.SignalSenderComm, sig.senderComm), span.Int(names.SignalSenderPID, int64(sig.senderPID)))
	}
	if p != nil {
		if ev := p.recentEvent("Killing", ct.name, ct.startedAtOr(), ct.exitAt); ev != nil && containsLiveness(ev.Message) {
			return names.CauseLivenessRestart, append(append(attrs, span.String(names.Message, ev.Message)), eventCut(ev)...)
		}
		if p.info != nil && p.info.Reason == "Evicted" || p.recentEvent("Evicted", "", ct.startedAtOr(), ct.exitAt) != nil || p.kubeletEnded() {
			return names.CauseEvicted, attrs
		}
	}
	if sig == nil {
		return names.CauseSignal, attrs
	}
	switch sig.senderKind {
	case names.SenderRuntime, names.SenderKubelet:
		return names.CauseKilledByRuntime, attrs
	case names.SenderInPod:
		return names.CauseKilledInPod, attrs
	case names.SenderKernel:
		return names.CauseSignal, attrs
	}
	return names.CauseKilledExternal, attrs
}

// stopSignal is how the runtime asked the container's init to stop: its
// first signal to it other than SIGKILL (SIGTERM, or the image's STOPSIGNAL
// or the pod's lifecycle.stopSignal, e.g. SIGQUIT), else any SIGTERM it got.
func (ct *container) stopSignal() *signalRec {
	for i := range ct.signals {
		s := &ct.signals[i]
		if s.toInit && s.sig != syscall.SIGKILL && (s.senderKind == names.SenderRuntime || s.senderKind == names.SenderKubelet) {
			return s
		}
	}
	return ct.signalOf(syscall.SIGTERM)
}

// gracefulExit tells an exit code that reports the stop signal handled:
// 128+signal (what a shell's trap and most runtimes exit with), or 130 for
// an interrupt-style handler.
func gracefulExit(code int, sig syscall.Signal) bool {
	return code == 128+int(sig) || code == 130
}

// livenessCause tells a kubelet restart after failed liveness probes, whatever
// the exit code (a process that handles SIGTERM exits 0): the kubelet's
// Killing event says so, or, without it (events lag, or no API server), the
// runtime's SIGTERM came right after a failed liveness probe seen in the
// kernel while the pod was not being deleted.
func (c *Correlator) livenessCause(ct *container) (names.Cause, []span.Attr) {
	p := ct.pod
	if p == nil {
		return "", nil
	}
	term := ct.stopSignal()
	var attrs []span.Attr
	if term != nil {
		attrs = append(attrs, span.String(names.SignalSenderKind, string(term.senderKind)),
			span.String(names.SignalSenderComm, term.senderComm), span.Int(names.SignalSenderPID, int64(term.senderPID)))
	}
	if ev := p.recentEvent("Killing", ct.name, ct.startedAtOr(), ct.exitAt); ev != nil {
		switch {
		case strings.Contains(ev.Message, "failed startup probe"):
			return names.CauseStartupProbeRestart, append(append(attrs, span.String(names.Message, ev.Message)), eventCut(ev)...)
		case containsLiveness(ev.Message):
			return names.CauseLivenessRestart, append(append(attrs, span.String(names.Message, ev.Message)), eventCut(ev)...)
		}
	}
	if term == nil || (term.senderKind != names.SenderRuntime && term.senderKind != names.SenderKubelet) || p.info != nil && p.info.DeletionTimestamp != nil {
		return "", nil
	}
	// A failed startup probe makes the kubelet restart the container too,
	// before it ever counted as started.
	if gap := term.at.Sub(ct.lastStartupFail); !ct.lastStartupFail.IsZero() && gap >= 0 && gap < livenessKillWindow &&
		(ct.lastLivenessFail.IsZero() || ct.lastStartupFail.After(ct.lastLivenessFail)) {
		return names.CauseStartupProbeRestart, append(attrs, span.String(names.Message, "stopped by the runtime right after a failed startup probe"))
	}
	if ct.lastLivenessFail.IsZero() {
		return "", nil
	}
	if gap := term.at.Sub(ct.lastLivenessFail); gap >= 0 && gap < livenessKillWindow {
		return names.CauseLivenessRestart, append(attrs, span.String(names.Message, "stopped by the runtime right after a failed liveness probe"))
	}
	return "", nil
}

// livenessKillWindow: a runtime SIGTERM this soon after a failed liveness
// probe is the kubelet's restart.
const livenessKillWindow = 5 * time.Second

func containsLiveness(msg string) bool {
	return len(msg) > 0 && (contains(msg, "failed liveness probe") || contains(msg, "Liveness"))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
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

// signalOf returns the first signal of a kind sent to the container's init.
func (ct *container) signalOf(sig syscall.Signal) *signalRec {
	i := slices.IndexFunc(ct.signals, func(s signalRec) bool { return s.sig == sig && s.toInit })
	if i < 0 {
		return nil
	}
	return &ct.signals[i]
}

// mainContainersDone: every regular (non-init, non-sidecar) container of
// the pod has exited.
func (p *pod) mainContainersDone() bool {
	n := 0
	for _, ct := range p.containers {
		if ct.notApp() || ct.name == "" {
			continue
		}
		if spec, isInit := p.spec(ct.name); isInit || spec != nil && spec.Sidecar {
			continue
		}
		n++
		if !ct.exited {
			return false
		}
	}
	return n > 0
}

// recentEvent finds the last Kubernetes event with a reason for a container
// in [from, to].
func (p *pod) recentEvent(reason, container string, from, to time.Time) *fact.K8sEvent {
	for i := len(p.k8sEvents) - 1; i >= 0; i-- {
		ev := p.k8sEvents[i]
		if ev.Reason != reason || (container != "" && ev.Container != "" && ev.Container != container) {
			continue
		}
		if !ev.LastTime.Before(from.Add(-2*time.Second)) && !ev.LastTime.After(to.Add(2*time.Second)) {
			return ev
		}
	}
	return nil
}
