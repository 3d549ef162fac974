package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/test/e2e/backends"
)

// maxSpanLatency is the target from a phase's end (the span's end timestamp:
// the kernel's, runtime's or API server's fact) until Jaeger returns the
// span, at the tracer's default settings as deployed by deploy/.
const maxSpanLatency = 2 * time.Second

// spanSeen is when a span was first readable from Jaeger.
type spanSeen struct {
	name    string
	end     time.Time // the span's end timestamp
	seen    time.Time // first poll that returned it
	latency time.Duration
	// api is when the test first saw, in the API server, the fact the
	// tracer waits for (Ready, the pod gone); zero for kernel facts.
	api time.Time
}

// ---- 27: how soon a phase's span can be read ----------------------------------

// spanLatency measures, for a few pods in a row, how long after a phase ends
// its span can be read from Jaeger: pod.startup (Ready), container.run (the
// container's exit, a kernel fact), pod.termination and the pod's root span
// (the pod gone). Jaeger and the API server are polled every 100 ms from
// before the phase ends.
//
// Asserted (<= maxSpanLatency): pod.termination and the pod's root span.
// Measured here on 2026-11-24 under PODCHRON_TEST_LOAD=1, three runs at the
// defaults (OTLP batch timeout 100 ms): 0.87–1.21 s; with the batch timeout
// at 1 s they took up to 2.3 s.
//
// Logged, not asserted, because the defaults do not always meet the target,
// and what holds them lies outside the exporter:
//   - container.run, 0.9–2.6 s over those runs: the correlator waits up to
//     its settle time (1.5 s, internal/correlate/lifecycle.go) for the
//     runtime's name and reason of an exited container. When a CRI poll
//     reports the exit soon, the span is out in about a second; when none
//     does, the wait runs out (the span leaves about 1.5 s + the batch
//     timeout after the exit). Polling CRI every 500 ms instead of 1 s did
//     not remove the long cases (1.5–2.4 s in one run).
//   - pod.startup, 2.4–3.6 s: its end is the container's start (kernel
//     evidence refining the Ready condition), but the tracer learns of Ready
//     from the API server, where the kubelet posts it 0.1–0.9 s later, and
//     the correlator then waits the same settle time for trailing kernel
//     evidence before it ends the start-up.
func (e *env) spanLatency(t *testing.T) {
	t.Parallel()
	const ns = "s27-latency"
	const pods = 3
	e.namespace(t, ns)
	var all []spanSeen
	for i := range pods {
		name := fmt.Sprintf("latency-%d", i)
		grace := int64(30)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{container("app", sh(gracefulApp)...)},
		}}
		p := e.createPod(t, ns, pod)
		traceID := correlate.TraceIDForPod(string(p.UID)).String()
		isReady := func() bool {
			got, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
			return err == nil && podReady(got)
		}
		startup := e.pollSpans(t, traceID, 2*time.Minute, isReady, names.SpanPodStartup)
		e.waitPod(t, ns, name, "Ready", time.Minute, ready)
		// The pod is Ready and its start-up span is out: end it.
		e.deletePod(t, ns, name)
		isGone := func() bool {
			_, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
			return err != nil && strings.Contains(err.Error(), "not found")
		}
		ended := e.pollSpans(t, traceID, 2*time.Minute, isGone, names.SpanContainerRun, names.SpanPodTermination, "pod")
		e.waitGone(t, ns, name, time.Minute)
		ended[0].api = time.Time{} // container.run ends at the kernel's exit
		for _, s := range append(startup, ended...) {
			api := ""
			if !s.api.IsZero() {
				api = fmt.Sprintf(" (the API server showed it %s after the end)", s.api.Sub(s.end).Round(time.Millisecond))
			}
			t.Logf("pod %s: %-16s ended %s, readable from Jaeger %s later%s", name, s.name,
				s.end.Format("15:04:05.000"), s.latency.Round(time.Millisecond), api)
			all = append(all, s)
		}
	}
	asserted := map[string]bool{names.SpanPodTermination: true, "pod": true}
	byName := map[string][]time.Duration{}
	for _, s := range all {
		byName[s.name] = append(byName[s.name], s.latency)
	}
	var summary []string
	for _, n := range []string{names.SpanPodStartup, names.SpanContainerRun, names.SpanPodTermination, "pod"} {
		l := byName[n]
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		summary = append(summary, fmt.Sprintf("%s median %s max %s", n,
			l[len(l)/2].Round(time.Millisecond), l[len(l)-1].Round(time.Millisecond)))
		if worst := l[len(l)-1]; asserted[n] && worst > maxSpanLatency {
			t.Errorf("%s: readable from Jaeger up to %s after its phase ended, want <= %s (all: %v)", n, worst.Round(time.Millisecond), maxSpanLatency, l)
		}
	}
	t.Logf("span latency, phase end -> readable from Jaeger (%d pods, 100 ms polls; target %s, asserted for pod.termination and pod): %s",
		pods, maxSpanLatency, strings.Join(summary, "; "))
}

// pollSpans polls Jaeger every 100 ms until the trace holds one span of each
// name, and returns when each was first seen, against its end timestamp.
// fact, polled alongside, says when the API server first shows what the
// spans wait for.
func (e *env) pollSpans(t *testing.T, traceID string, timeout time.Duration, fact func() bool, names ...string) []spanSeen {
	t.Helper()
	found := map[string]spanSeen{}
	deadline := time.Now().Add(timeout)
	var tr *backends.Trace
	var factAt time.Time
	for {
		if factAt.IsZero() && fact() {
			factAt = time.Now()
		}
		got, err := e.jaeger.Trace(e.ctx, traceID)
		now := time.Now()
		if err == nil {
			tr = got
			for _, n := range names {
				if _, ok := found[n]; ok {
					continue
				}
				if ss := got.Named(n); len(ss) > 0 {
					s := ss[0]
					found[n] = spanSeen{name: n, end: s.End(), seen: now, latency: now.Sub(s.End())}
				}
			}
		}
		if len(found) == len(names) {
			break
		}
		if now.After(deadline) {
			e.dumpLogs(t)
			t.Fatalf("trace %s: spans %v not all in Jaeger after %s (last error %v)\n%s", traceID, names, timeout, err, tr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := make([]spanSeen, 0, len(names))
	for _, n := range names {
		s := found[n]
		s.api = factAt
		out = append(out, s)
	}
	return out
}
