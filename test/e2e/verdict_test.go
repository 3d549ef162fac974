package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/query"
	"github.com/podchron/podchron/test/e2e/backends"
)

// 51: the verdict in plain words and the start-up's long pole. An init
// container that sleeps 4 s is the long pole (podchron.startup.long_pole
// "init" on pod.startup and the root, long_pole="init" on the start-up
// histogram); the app ignores SIGTERM, so the termination's verdict says
// it was SIGKILLed at the end of its 3 s grace period; the run says why it
// ended as Kubernetes writes it (k8s.container.status.last_terminated_reason).
func (e *env) verdict(t *testing.T) {
	t.Parallel()
	const ns = "s51-verdict"
	e.namespace(t, ns)
	grace := int64(3)
	pod := e.readyPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-init"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{container("warm", "sleep", "4")},
			Containers:     []corev1.Container{container("app", sh(`trap '' TERM; while :; do sleep 1; done`)...)}},
	})
	wantPole := func(s *backends.Span) error {
		secs, err := strconv.ParseFloat(s.Str(names.StartupLongPoleSeconds), 64)
		if err != nil || secs < 3.5 || secs > 60 {
			return fmt.Errorf("%s %s=%q, want the init's 4 s", s.Name, names.StartupLongPoleSeconds, s.Str(names.StartupLongPoleSeconds))
		}
		return attr(s, names.StartupLongPole, names.PhaseInit)
	}
	e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		st := pk.one(names.SpanPodStartup)
		if pk.err != nil {
			return pk.err
		}
		return firstErr(wantPole(st), verdictHas(st, "started in ", "; long pole: init "))
	})
	e.metric(t, fmt.Sprintf(`sum(podchron_pod_startup_duration_seconds_count{namespace=%q,%s=%q})`, ns, names.LabelLongPole, names.PhaseInit),
		time.Minute, func(v float64) bool { return v == 1 })
	e.deleteAndWait(t, ns, pod.Name)
	killed := "container app ignored SIGTERM and was SIGKILLed at the end of the 3 s grace period"
	e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one(names.SpanPod)
		term := pk.one(names.SpanPodTermination)
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		// The reason is as the runtime or the API wrote it: none when the
		// container was removed before either reported its end (under
		// load, the deletion's removal can come before the runtime's
		// poll saw it exited, and the deleted pod's last status is its
		// running one).
		reason := error(nil)
		if r := run.Str(names.K8sContainerStatusLastTerminatedReason); r != "" {
			reason = attr(run, names.K8sContainerStatusLastTerminatedReason, "Error")
		} else {
			t.Logf("scenario 51: the run has no %s (its end reported by neither the runtime nor the API)", names.K8sContainerStatusLastTerminatedReason)
		}
		return firstErr(verdictHas(term, "terminated in ", killed),
			verdictHas(root, "started in ", "; long pole: init ", killed), wantPole(root), reason)
	})
}

// verdictHas checks that a span's podchron.verdict holds every piece.
func verdictHas(s *backends.Span, pieces ...string) error {
	v := s.Str(names.Verdict)
	for _, p := range pieces {
		if !strings.Contains(v, p) {
			return fmt.Errorf("%s verdict %q lacks %q", s.Name, v, p)
		}
	}
	return nil
}

// checkVerdicts is the run's last check: every pod root in Jaeger since
// start has a verdict, every pod.startup its long pole, and Prometheus's
// start-up histogram is labelled by long poles it knows.
func (e *env) checkVerdicts(t *testing.T, start time.Time) {
	for _, op := range []string{names.SpanPod, names.SpanPodStartup} {
		spans, err := e.allSpans(op, start)
		// A short run (one or two scenarios, -run) may end before its
		// first pod root is exported: a root waits for its pod's cleanup.
		for wait := time.Now().Add(time.Minute); err == nil && len(spans) == 0 && time.Now().Before(wait) && e.ctx.Err() == nil; {
			time.Sleep(2 * time.Second)
			spans, err = e.allSpans(op, start)
		}
		if err != nil {
			t.Errorf("Jaeger: %s spans: %v", op, err)
			continue
		}
		if len(spans) == 0 {
			t.Errorf("Jaeger holds no %s span since the run began", op)
		}
		bad := 0
		for _, s := range spans {
			miss := s.Str(names.Verdict) == ""
			if op == names.SpanPodStartup {
				miss = miss || s.Str(names.StartupLongPole) == ""
			}
			if miss {
				bad++
				if bad <= 5 {
					t.Errorf("%s span of pod %v/%v: verdict %q, long pole %q", op, s.Resource[names.K8sNamespaceName], s.Resource[names.K8sPodName], s.Str(names.Verdict), s.Str(names.StartupLongPole))
				}
			}
		}
		t.Logf("%d %s spans in Jaeger since the run began, %d without a verdict or long pole", len(spans), op, bad)
	}
	// Over the run: a tracer restart (scenarios 8, 31) starts its
	// counters again.
	q := fmt.Sprintf(`count by (%s) (last_over_time(podchron_pod_startup_duration_seconds_count[1h]))`, names.LabelLongPole)
	s, err := e.prom.Query(e.ctx, q)
	if err != nil || len(s) == 0 {
		t.Errorf("%s: %v, %d series", q, err, len(s))
		return
	}
	for _, x := range s {
		if pole := x.Labels[names.LabelLongPole]; !slices.Contains(names.StartupPhases, pole) {
			t.Errorf("%s: long_pole=%q is not a start-up phase (%v)", q, pole, names.StartupPhases)
		}
	}
}

// allSpans returns every span called op in the traces Jaeger holds since
// start, through its public api/v3 search (internal/query, as kubectl
// podchron reads them; not limited to the 20 traces of backends.Search).
func (e *env) allSpans(op string, start time.Time) ([]*backends.Span, error) {
	c, err := query.New(query.Jaeger, e.jaeger.Query, nil)
	if err != nil {
		return nil, err
	}
	traces, err := c.Search(e.ctx, query.Search{Since: start, Limit: 5000})
	if err != nil {
		return nil, err
	}
	var out []*backends.Span
	for _, tr := range traces {
		for _, sp := range tr.Spans {
			if sp.Name != op {
				continue
			}
			s := &backends.Span{Name: op, Tags: map[string]any{}, Resource: map[string]any{}}
			for _, a := range sp.Attrs {
				s.Tags[a.Key] = a.Value
			}
			for _, a := range sp.Resource {
				s.Resource[a.Key] = a.Value
			}
			out = append(out, s)
		}
	}
	return out, nil
}
