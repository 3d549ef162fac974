package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/test/e2e/backends"
)

// maxSpanLatency is the target from a phase's end (the span's end timestamp:
// the kernel's, runtime's or API server's fact) until Jaeger returns the
// span, at the tracer's default settings as deployed by deploy/: issue 21's
// 1 s (at p95; with three pods a scenario, its worst).
const maxSpanLatency = time.Second

// brokenSpanLatency fails the scenario: a span this late means the path
// that brings it out (the runtime kick, the sources' progress, the
// exporter) is broken, not slow. The 1 s target itself is a figure the
// scenario prints (PASS or MISS): speed targets are measured, and a loaded
// 2-core machine moves them by tenths of a second from day to day (the
// base of 2026-11-25 measured container.run at most 1.88 s here, the day's
// HEAD 2.17-2.43 s in three runs).
const brokenSpanLatency = 5 * time.Second

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
// Reported against maxSpanLatency (and asserted below brokenSpanLatency)
// for all four; for pod.startup from the later
// of its end and the moment the API server showed Ready (less one 100 ms
// poll), as the kubelet decides when Ready is. Measured here on 2026-11-24
// under PODCHRON_TEST_LOAD=1, at the defaults (OTLP batch timeout 100 ms),
// over seven runs:
//   - pod.termination and pod: 0.35–1.36 s.
//   - container.run: 0.59–1.78 s. The kernel's exit of the container's
//     init (PID 1 of its pid namespace) brings the runtime's next poll
//     forward (pipeline.Config.RuntimeKick), so its exit reason follows
//     within a fraction of a second; before, the span waited for the next
//     1 s poll or the 1.5 s settle window: 0.9–2.6 s.
//   - pod.startup: 0.99–2.09 s from its end, nearly all of it the kubelet
//     posting Ready (up to 1.4 s after the container started, in whole
//     seconds); 0.61–1.42 s after the API server showed Ready. With the
//     kernel reporting progress the correlator no longer waits 1.5 s for
//     trailing kernel evidence once Ready is in: 2.4–3.6 s before.
//
// On 2026-11-28 (one run each, under load, 1.35 leg) the tracer's own
// share was measured with a temporary log (the model's hold: span end ->
// handed to the exporter): pod.termination was held 0.92 s in two of three
// pods, waiting for the runtime's progress, which came only with the next
// 1 s poll (a pod's deletion kicks no poll); container.run 0.30–0.49 s.
// Since each pod update from the API server asks the runtime for one poll
// (pipeline.Config.RuntimePoll) and a kick's follow-ups come every 100 ms:
// pod.termination and pod 334–356 ms from Jaeger (were 464 ms–1.13 s),
// pod.startup 355–486 ms (1.32–1.76 s), container.run 625–642 ms
// (651–795 ms).
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
		traceID := span.TraceIDForPod(string(p.UID)).String()
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
	byName := map[string][]time.Duration{}
	var afterReady []time.Duration // pod.startup: from when the API server showed Ready
	for _, s := range all {
		byName[s.name] = append(byName[s.name], s.latency)
		if s.name == names.SpanPodStartup && !s.api.IsZero() {
			from := s.api.Add(-100 * time.Millisecond)
			if s.end.After(from) {
				from = s.end
			}
			afterReady = append(afterReady, s.seen.Sub(from))
		}
	}
	var summary []string
	for _, n := range []string{names.SpanPodStartup, names.SpanContainerRun, names.SpanPodTermination, "pod"} {
		l := byName[n]
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		summary = append(summary, fmt.Sprintf("%s median %s max %s", n,
			l[len(l)/2].Round(time.Millisecond), l[len(l)-1].Round(time.Millisecond)))
		if n == names.SpanPodStartup {
			// Ready is the kubelet's word, which the API server shows in
			// whole seconds up to 1.4 s after the container started: the
			// wait that is the tracer's starts when Ready can be read.
			l = afterReady
			sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
			summary = append(summary, fmt.Sprintf("%s after Ready was readable: max %s", n, l[len(l)-1].Round(time.Millisecond)))
		}
		worst := l[len(l)-1]
		verdict := "PASS"
		if worst > maxSpanLatency {
			verdict = "MISS"
		}
		summary = append(summary, fmt.Sprintf("%s target %s: %s", n, maxSpanLatency, verdict))
		if worst > brokenSpanLatency {
			t.Errorf("%s: readable from Jaeger up to %s after its phase ended, want <= %s (all: %v)", n, worst.Round(time.Millisecond), brokenSpanLatency, l)
		}
	}
	t.Logf("span latency, phase end -> readable from Jaeger (%d pods, 100 ms polls; target %s): %s",
		pods, maxSpanLatency, strings.Join(summary, "; "))
}

// pollSpans polls Jaeger every 100 ms until the trace holds one span of each
// name, and returns when each was first seen, against its end timestamp.
// fact, polled alongside every 100 ms in a goroutine of its own, says when
// the API server first shows what the spans wait for: polled in the same
// loop, a loaded API server's slow answers (up to a second each in the full
// suite under load, 2026-11-28) delayed the Jaeger reads and were counted
// as the spans' latency.
func (e *env) pollSpans(t *testing.T, traceID string, timeout time.Duration, fact func() bool, names ...string) []spanSeen {
	t.Helper()
	found := map[string]spanSeen{}
	deadline := time.Now().Add(timeout)
	var tr *backends.Trace
	factCh := make(chan time.Time, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for {
			if fact() {
				factCh <- time.Now()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	for {
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
	// The fact is in the API server by the time its spans are out (the
	// tracer saw it there first); wait for the poller's word on it.
	var factAt time.Time
	select {
	case factAt = <-factCh:
	case <-time.After(30 * time.Second):
		t.Errorf("trace %s: the API server did not show the spans' fact within 30s of their being readable", traceID)
	}
	out := make([]spanSeen, 0, len(names))
	for _, n := range names {
		s := found[n]
		s.api = factAt
		out = append(out, s)
	}
	return out
}
