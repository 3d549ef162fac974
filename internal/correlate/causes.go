// Why a container's init ended: the exit cause and its evidence.

package correlate

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/probe"
)

// cause explains why a container's init process ended.
func (c *Correlator) cause(ct *container) (string, []Attr) {
	p := ct.pod
	var attrs []Attr
	if ct.unknownExit {
		return "unknown", []Attr{String("message", "removed before its exit was seen (kernel events lost or the tracer started late)")}
	}
	// The OOM kill is the cause when it killed the init (the kernel's view),
	// or when the runtime says OOMKilled and the kernel saw no OOM kill at
	// all (lost, or before the tracer). The runtime's reason alone is not
	// enough: it says OOMKilled for a child's OOM kill too.
	if ct.oom != nil || ct.reason == "OOMKilled" && len(ct.ooms) == 0 {
		if ct.oom != nil {
			attrs = append(attrs, Int("podchron.oom.victim.pid", int64(ct.oom.VictimTGID)),
				String("podchron.oom.victim.comm", ct.oom.VictimComm), String("podchron.oom.scope", ct.oomScope))
			if ct.oomMemcg != "" {
				attrs = append(attrs, String("podchron.oom.memcg", ct.oomMemcg))
			}
			if ct.oom.HasRSS {
				attrs = append(attrs, Int("podchron.oom.anon_rss_kb", int64(ct.oom.AnonRSSKB)))
			}
		}
		return "oom_killed", attrs
	}
	if cause, a := c.livenessCause(ct); cause != "" {
		return cause, a
	}
	if cause, a := ct.disruptionCause(); cause != "" {
		return cause, a
	}
	if ct.exitSignal == 0 {
		if p != nil && p.info != nil && p.info.Reason == "Evicted" {
			return "evicted", nil
		}
		if ct.exitCode == 0 {
			return "completed", nil
		}
		if stop := ct.stopSignal(); stop != nil && stop.at.Before(ct.exitAt) && gracefulExit(ct.exitCode, stop.sig) {
			// The app handled the stop signal and exited the way shells and
			// many runtimes report it (128+signal): a graceful stop.
			return "completed", []Attr{String("message", fmt.Sprintf("exit code %d after %s from the %s: a graceful stop",
				ct.exitCode, probe.SignalName(stop.sig), stop.senderKind))}
		}
		return "error", nil
	}
	sig := ct.signalOf(ct.exitSignal)
	if sig == nil && ct.exitSignal == syscall.SIGTERM {
		sig = ct.signalOf(syscall.SIGTERM)
	}
	if sig != nil {
		attrs = append(attrs, String("podchron.signal.sender.kind", sig.senderKind),
			String("podchron.signal.sender.comm", sig.senderComm), Int("podchron.signal.sender.pid", int64(sig.senderPID)))
	}
	if p != nil {
		if ev := p.recentEvent("Killing", ct.name, ct.startedAtOr(), ct.exitAt); ev != nil && containsLiveness(ev.Message) {
			return "liveness_restart", append(attrs, String("message", ev.Message))
		}
		if p.info != nil && p.info.Reason == "Evicted" || p.recentEvent("Evicted", "", ct.startedAtOr(), ct.exitAt) != nil {
			return "evicted", attrs
		}
	}
	if sig == nil {
		return "signal", attrs
	}
	switch sig.senderKind {
	case "runtime", "kubelet":
		return "killed_by_runtime", attrs
	case "in_pod":
		return "killed_in_pod", attrs
	case "kernel":
		return "signal", attrs
	}
	return "killed_external", attrs
}

// stopSignal is how the runtime asked the container's init to stop: its
// first signal to it other than SIGKILL (SIGTERM, or the image's STOPSIGNAL
// or the pod's lifecycle.stopSignal, e.g. SIGQUIT), else any SIGTERM it got.
func (ct *container) stopSignal() *signalRec {
	for i := range ct.signals {
		s := &ct.signals[i]
		if s.toInit && s.sig != syscall.SIGKILL && (s.senderKind == "runtime" || s.senderKind == "kubelet") {
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
func (c *Correlator) livenessCause(ct *container) (string, []Attr) {
	p := ct.pod
	if p == nil {
		return "", nil
	}
	term := ct.stopSignal()
	var attrs []Attr
	if term != nil {
		attrs = append(attrs, String("podchron.signal.sender.kind", term.senderKind),
			String("podchron.signal.sender.comm", term.senderComm), Int("podchron.signal.sender.pid", int64(term.senderPID)))
	}
	if ev := p.recentEvent("Killing", ct.name, ct.startedAtOr(), ct.exitAt); ev != nil {
		switch {
		case strings.Contains(ev.Message, "failed startup probe"):
			return "startup_probe_restart", append(attrs, String("message", ev.Message))
		case containsLiveness(ev.Message):
			return "liveness_restart", append(attrs, String("message", ev.Message))
		}
	}
	if term == nil || (term.senderKind != "runtime" && term.senderKind != "kubelet") || p.info != nil && p.info.DeletionTimestamp != nil {
		return "", nil
	}
	// A failed startup probe makes the kubelet restart the container too,
	// before it ever counted as started.
	if gap := term.at.Sub(ct.lastStartupFail); !ct.lastStartupFail.IsZero() && gap >= 0 && gap < livenessKillWindow &&
		(ct.lastLivenessFail.IsZero() || ct.lastStartupFail.After(ct.lastLivenessFail)) {
		return "startup_probe_restart", append(attrs, String("message", "stopped by the runtime right after a failed startup probe"))
	}
	if ct.lastLivenessFail.IsZero() {
		return "", nil
	}
	if gap := term.at.Sub(ct.lastLivenessFail); gap >= 0 && gap < livenessKillWindow {
		return "liveness_restart", append(attrs, String("message", "stopped by the runtime right after a failed liveness probe"))
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
