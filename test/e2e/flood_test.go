package e2e

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// ---- 50: one pod floods signals beside quiet pods ---------------------------

// floodApp sends itself an ignored SIGUSR1 as fast as a shell can (every
// one a signal record in the kernel, far beyond the default budget of
// 1000/s and 2000 at once) for floodSeconds, then idles. ($$$$: the
// kubelet expands $$ in a command to $.)
const floodSeconds = 25

var floodApp = fmt.Sprintf(`trap '' USR1; end=$(($(date +%%s)+%d)); `+
	`while [ "$(date +%%s)" -lt "$end" ]; do i=0; while [ $i -lt 2000 ]; do kill -USR1 $$$$; i=$((i+1)); done; done; `+
	`while :; do sleep 1; done`, floodSeconds)

// signalFlood: a pod flooding signals costs only itself. Its budget in the
// kernel refuses most of its signal records, and that is counted on its own
// trace and its own namespace's metric; quiet pods deleted during the flood
// keep every record of their stop (the SIGTERM, its handler, the exit) and
// carry neither throttling nor ring-buffer losses.
func (e *env) signalFlood(t *testing.T) {
	t.Parallel()
	const floodNS, quietNS, quietN = "s50-flood", "s50-quiet", 3
	e.namespace(t, floodNS)
	e.namespace(t, quietNS)
	app := container("app", sh(floodApp)...)
	// Half a CPU: a flood still far beyond the budget, without starving the
	// scenarios beside it on this 2-core node.
	app.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	grace := int64(2)
	flood := e.readyPod(t, floodNS, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "flood"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{app}, TerminationGracePeriodSeconds: &grace},
	})
	quiet := make([]*corev1.Pod, quietN)
	for i := range quiet {
		quiet[i] = e.readyPod(t, quietNS, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "quiet-" + strconv.Itoa(i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}},
		})
	}
	// The flood is under way (and throttled) before the quiet pods stop.
	e.eventually(t, "the flood throttled on its own namespace", time.Minute, func() error {
		s, err := e.prom.Query(e.ctx, `podchron_signals_throttled_total`)
		if err != nil {
			return err
		}
		for _, x := range s {
			if x.Labels["namespace"] == floodNS && x.Value >= 1000 {
				return nil
			}
		}
		sig, _ := e.prom.Query(e.ctx, `podchron_signals_total{signal="SIGUSR1"}`)
		return fmt.Errorf("podchron_signals_throttled_total = %v; podchron_signals_total{signal=SIGUSR1} = %v; the flood: %s", s, sig, e.floodState(floodNS))
	})
	for _, p := range quiet {
		e.deletePod(t, quietNS, p.Name)
	}
	for _, p := range quiet {
		e.waitGone(t, quietNS, p.Name, time.Minute)
		tr := e.trace(t, string(p.UID), time.Minute, quietStopIntact)
		report(t, tr)
	}
	e.deletePod(t, floodNS, flood.Name)
	e.waitGone(t, floodNS, flood.Name, time.Minute)
	tr := e.trace(t, string(flood.UID), time.Minute, func(tr *backends.Trace) error {
		root, err := only(tr, "pod")
		if err != nil {
			return err
		}
		// Jaeger renders a large int64 tag in exponent form (1.13001e+06).
		n, err := strconv.ParseFloat(root.Str(names.SignalsThrottled), 64)
		if err != nil || n < 1000 {
			return fmt.Errorf("root %s=%q, want the flood's refused records (≥ 1000)", names.SignalsThrottled, root.Str(names.SignalsThrottled))
		}
		for _, ev := range root.Events {
			if ev.Name == names.EventSignalsThrottled {
				return nil
			}
		}
		return fmt.Errorf("no %s event on the root", names.EventSignalsThrottled)
	})
	report(t, tr)
	root, _ := only(tr, "pod")
	t.Logf("scenario 50: the flood's root %s=%s; %d quiet pods lost nothing", names.SignalsThrottled,
		root.Str(names.SignalsThrottled), quietN)
	// Nothing throttled in the quiet namespace (its series, made with its
	// first pod, stays at 0).
	s, err := e.prom.Query(e.ctx, fmt.Sprintf(`podchron_signals_throttled_total{namespace=%q} > 0`, quietNS))
	if err != nil {
		t.Fatalf("Prometheus: %v", err)
	}
	if len(s) != 0 {
		t.Errorf("podchron_signals_throttled_total{namespace=%q} = %v, want 0", quietNS, s)
	}
}

// quietStopIntact: a quiet pod's graceful stop, every record of it there,
// no loss or throttling on its trace.
func quietStopIntact(tr *backends.Trace) error {
	pk := &pick{tr: tr}
	root := pk.one("pod")
	stop := pk.one(names.SpanContainerStop, ctrName("app"))
	run := pk.one(names.SpanContainerRun, ctrName("app"))
	if pk.err != nil {
		return pk.err
	}
	for _, key := range []string{names.SignalsThrottled, names.EventsLost} {
		if v := root.Str(key); v != "" {
			return fmt.Errorf("quiet pod's root has %s=%s", key, v)
		}
	}
	for _, ev := range root.Events {
		if ev.Name == names.EventSignalsThrottled || ev.Name == names.EventsLost {
			return errors.New("quiet pod's root has a loss event: " + ev.Name)
		}
	}
	return firstErr(attr(stop, names.SignalName, "SIGTERM"), attr(stop, names.SignalDisposition, "handler"),
		attr(stop, names.SignalSenderKind, "runtime"), attr(run, names.ExitCause, "completed"))
}

// floodState is what the flood pod's init says of itself (its ignored
// signals, its processes), for a failure message.
func (e *env) floodState(ns string) string {
	out, err := e.cluster.Kubectl(e.ctx, "exec", "-n", ns, "flood", "--", "sh", "-c", "grep -E 'SigIgn|State' /proc/1/status; ps")
	if err != nil {
		return fmt.Sprintf("kubectl exec: %v: %s", err, out)
	}
	return string(out)
}
