package e2e

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// longTraceAge is how long scenario 28's pod lives.
const longTraceAge = 2 * time.Minute

// ---- 28: a trace whose spans arrive over minutes, the root last ---------------

// longTrace checks what a trace back end behind a collector must cope with
// for podchron: one pod's spans arrive over the pod's whole life — the
// start-up's when the pod is Ready, the root span (`pod`) only when the pod
// is gone, minutes later (days, for real workloads). The pod lives
// longTraceAge; its start-up spans must be readable while it lives, with no
// root yet, and found by a search on the pod's name; after the deletion the
// trace fetched by ID must be whole: the same early spans, unchanged, and
// the root, with every span's parent in the trace and the root spanning
// them all. The runtime removes the pod's sandbox up to a minute after the
// object is gone (containerd 1.6 runs the CNI DEL again then): after that
// the trace is unchanged.
func (e *env) longTrace(t *testing.T) {
	t.Parallel()
	const ns = "s28-long-trace"
	const name = "long-lived"
	e.namespace(t, ns)
	grace := int64(10)
	p := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers:                    []corev1.Container{container("app", sh(gracefulApp)...)},
	}})
	traceID := span.TraceIDForPod(string(p.UID)).String()

	// 1. While the pod lives: the start-up's spans, under a root that is
	// not exported yet.
	early := e.trace(t, string(p.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		pk.one(names.SpanPodStartup)
		pk.one(names.SpanPodSandbox)
		pk.one(names.SpanContainerStart, ctrName("app"))
		return pk.err
	})
	earlySeen := time.Now()
	report(t, early)
	startup, _ := only(early, names.SpanPodStartup)
	rootID := startup.ParentID
	if rootID == "" {
		t.Fatalf("pod.startup has no parent: it should be a child of the pod's root span\n%s", early)
	}
	if roots := early.Named(names.SpanPod); len(roots) > 0 || early.ByID(rootID) != nil {
		t.Fatalf("the root span was exported while the pod lives\n%s", early)
	}
	if ids := e.searchByPod(t, ns, name); !slices.Contains(ids, traceID) {
		t.Fatalf("a search for k8s.pod.name=%s, k8s.namespace.name=%s found %v, not trace %s", name, ns, ids, traceID)
	}

	// 2. The pod lives longTraceAge, then is deleted.
	if d := time.Until(p.CreationTimestamp.Add(longTraceAge)); d > 0 {
		t.Logf("pod %s/%s: start-up spans out; letting it live %s more", ns, name, d.Round(time.Second))
		select {
		case <-e.ctx.Done():
			t.Fatal(e.ctx.Err())
		case <-time.After(d):
		}
	}
	deleted := time.Now()
	e.deleteAndWait(t, ns, name)

	// 3. The whole trace, by ID.
	tr := e.trace(t, string(p.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one(names.SpanPod)
		pk.one(names.SpanPodTermination)
		pk.one(names.SpanContainerRun, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		return whole(tr, root, rootID, early)
	})
	rootSeen := time.Now()
	report(t, tr)
	root, _ := only(tr, names.SpanPod)
	// The root spans the pod's life: from its creation, which its
	// CreationTimestamp gives to the second (metav1.Time; the tracer
	// sharpens it by when it first saw the pod), to after the deletion.
	// The test waited longTraceAge from the truncated timestamp, so the
	// pod itself lived between longTraceAge-1s and longTraceAge.
	if created := p.CreationTimestamp.Time; root.Start.Before(created) || root.Start.After(created.Add(time.Second)) ||
		root.End().Before(deleted) {
		t.Errorf("the root span %s..%s (%s) does not span the pod's life: created within the second of %s, deletion asked at %s",
			root.Start.Format("15:04:05.000"), root.End().Format("15:04:05.000"), root.Duration,
			created.Format("15:04:05"), deleted.Format("15:04:05.000"))
	}
	// The spans reached the back end over minutes: the start-up's before
	// the deletion, the root after it.
	if spread := deleted.Sub(earlySeen); spread < longTraceAge/2 {
		t.Errorf("the start-up spans were read only %s before the pod's deletion: the scenario did not spread the trace over minutes", spread.Round(time.Second))
	}
	t.Logf("scenario 28: %d spans; start-up spans read %s, root read %s later (the pod lived %s); whole by ID",
		len(tr.Spans), earlySeen.Format("15:04:05"), rootSeen.Sub(earlySeen).Round(time.Second), root.Duration.Round(time.Second))

	// 4. A search on the pod's name returns the whole trace too.
	if ids := e.searchByPod(t, ns, name); !slices.Contains(ids, traceID) {
		t.Fatalf("after the deletion a search for k8s.pod.name=%s found %v, not trace %s", name, ids, traceID)
	}

	// 5. The runtime removes the pod's sandbox later, when the kubelet's
	// garbage collection asks (measured 52-58 s after the object was gone,
	// on 1.35 with containerd 1.6 and 1.37 with containerd 2), and
	// containerd runs the CNI DEL again.
	// The trace has ended: those runs are counted, never added to it
	// outside the root's time.
	e.eventually(t, "the runtime's removal of the pod's sandbox", 3*time.Minute, func() error {
		sbs, err := e.runtime.CRI().ListSandboxes(e.ctx)
		if err != nil {
			return err
		}
		for _, sb := range sbs {
			if sb.PodUID == string(p.UID) {
				return fmt.Errorf("sandbox %s is still there", sb.ID)
			}
		}
		return nil
	})
	removed := time.Now()
	time.Sleep(5 * time.Second) // a span emitted at the removal would be in Jaeger by now (export lag < 1 s)
	// Counted for every pod of the run whose sandbox went after its end
	// (printed: whether a runtime runs the DEL again is its own choice).
	q := `sum(podchron_correlation_misses_total{reason="cni_after_trace_end"})`
	late, err := e.prom.Query(e.ctx, q)
	t.Logf("scenario 28: sandbox removed %s after the deletion was asked; %s = %v (%v)", removed.Sub(deleted).Round(time.Second), q, late, err)
	after := e.trace(t, string(p.UID), time.Minute, func(*backends.Trace) error { return nil })
	afterRoot, err := only(after, names.SpanPod)
	if err == nil {
		err = whole(after, afterRoot, rootID, early)
	}
	if err != nil || len(after.Spans) != len(tr.Spans) {
		t.Errorf("after the sandbox's removal (%s) the trace changed: %d spans, %d before the removal; %v\n%s",
			removed.Format("15:04:05.000"), len(after.Spans), len(tr.Spans), err, after)
	}
}

// whole checks that tr is one tree under root: root is the only span
// without a parent and has the ID the early spans named as their parent,
// every other span's parent is in the trace, root spans every span, and
// every span of early is still there unchanged.
func whole(tr *backends.Trace, root *backends.Span, rootID string, early *backends.Trace) error {
	if root.SpanID != rootID || root.ParentID != "" {
		return fmt.Errorf("root span %s (parent %q), want %s with no parent", root.SpanID, root.ParentID, rootID)
	}
	// Clocks are read in different places (kernel, runtime, API server).
	const slack = 50 * time.Millisecond
	for _, s := range tr.Spans {
		if s == root {
			continue
		}
		if s.ParentID == "" {
			return fmt.Errorf("%s (%s) has no parent: a second root", s.Name, s.SpanID)
		}
		if tr.ByID(s.ParentID) == nil {
			return fmt.Errorf("%s's parent %s is not in the trace", s.Name, s.ParentID)
		}
		if s.Start.Before(root.Start.Add(-slack)) || s.End().After(root.End().Add(slack)) {
			return fmt.Errorf("%s [%s, %s] is outside the root [%s, %s]", s.Name,
				s.Start.Format(time.StampMilli), s.End().Format(time.StampMilli),
				root.Start.Format(time.StampMilli), root.End().Format(time.StampMilli))
		}
	}
	for _, s := range early.Spans {
		got := tr.ByID(s.SpanID)
		if got == nil {
			return fmt.Errorf("the early %s span %s is gone", s.Name, s.SpanID)
		}
		if got.Name != s.Name || got.ParentID != s.ParentID || !got.Start.Equal(s.Start) || got.Duration != s.Duration {
			return fmt.Errorf("the early %s span %s changed: %+v, then %+v", s.Name, s.SpanID, *s, *got)
		}
	}
	return nil
}

// searchByPod asks Jaeger's search for podchron's traces whose spans carry
// the pod's name and namespace (resource attributes: Jaeger's process tags)
// and returns their IDs.
func (e *env) searchByPod(t *testing.T, ns, name string) []string {
	t.Helper()
	var ids []string
	e.eventually(t, "Jaeger search for pod "+ns+"/"+name, 30*time.Second, func() error {
		var err error
		ids, err = e.jaeger.Search(e.ctx, "podchron", map[string]string{names.K8sPodName: name, names.K8sNamespaceName: ns})
		if err == nil && len(ids) == 0 {
			err = errors.New("no traces")
		}
		return err
	})
	return ids
}
