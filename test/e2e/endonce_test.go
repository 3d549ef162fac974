package e2e

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/test/e2e/backends"
)

// endedLate is past the 5 minutes the model used to keep a finished pod
// (after which a late deletion started a second trace).
const endedLate = 5*time.Minute + 30*time.Second

// Scenario 30: terminal pods deleted late. A pod with restartPolicy Never
// that exits 0 (Succeeded) and one that exits 1 (Failed), kept by the API
// as a Job's history keeps them: their traces end on the node (the root
// in Jaeger); more than five minutes later they are deleted. The deletion,
// the runtime's sandbox removal and its CNI DEL do not reopen the trace:
// one root, one pod.scheduling, no pod.startup ERROR, at most one
// pod.termination.
func (e *env) terminalDeletedLate(t *testing.T) {
	t.Parallel()
	const ns = "s30-ended"
	e.namespace(t, ns)
	t.Run("pods", func(t *testing.T) {
		for _, tc := range []struct {
			name, phase string
			code        int
		}{{"done", "Succeeded", 0}, {"failed", "Failed", 1}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
						Containers: []corev1.Container{container("job", sh(fmt.Sprintf("sleep 2; exit %d", tc.code))...)}}})
				e.waitPod(t, ns, pod.Name, tc.phase, 2*time.Minute, func(p *corev1.Pod) error {
					if string(p.Status.Phase) != tc.phase {
						return errors.New("phase " + string(p.Status.Phase))
					}
					return nil
				})
				uid := string(pod.UID)
				e.trace(t, uid, 2*time.Minute, func(tr *backends.Trace) error {
					if len(roots(tr)) == 0 {
						return errors.New("no root span yet (the pod's end on the node)")
					}
					return nil
				})
				time.Sleep(endedLate)
				e.deleteAndWait(t, ns, pod.Name)
				// The tracer's late facts (deletion, sandbox removal, CNI
				// DEL) come within seconds; give them and the export time.
				time.Sleep(30 * time.Second)
				tr := e.trace(t, uid, time.Minute, func(tr *backends.Trace) error { return nil })
				t.Logf("scenario 30: %s after a late deletion:\n%s", tc.name, tr)
				if err := endedOnce(tr); err != nil {
					t.Errorf("scenario 30: %s: %v", tc.name, err)
				}
			})
		}
	})
}

// roots are the trace's spans without a parent.
func roots(tr *backends.Trace) []*backends.Span {
	return tr.Find(func(s *backends.Span) bool { return s.ParentID == "" })
}

// endedOnce: one root, one pod.scheduling, no pod.startup ERROR, at most
// one pod.termination.
func endedOnce(tr *backends.Trace) error {
	if n := len(roots(tr)); n != 1 {
		return fmt.Errorf("%d root spans, want 1", n)
	}
	if n := len(tr.Named(names.SpanPodScheduling)); n != 1 {
		return fmt.Errorf("%d pod.scheduling spans, want 1", n)
	}
	for _, s := range tr.Named(names.SpanPodStartup) {
		if s.Error {
			return fmt.Errorf("pod.startup ERROR (%s)", s.Duration)
		}
	}
	if n := len(tr.Named(names.SpanPodTermination)); n > 1 {
		return fmt.Errorf("%d pod.termination spans, want at most 1", n)
	}
	return nil
}

// Scenario 31: the tracer restarted while one pod is NotReady (its
// readiness probe fails) past the e2e's 45 s --startup-timeout and one has
// Failed before it was ever Ready. The first tracer decided both start-ups
// (ERROR gave_up, ERROR failed); the new one first sees them with their
// containers started before it: it decides no new pod.startup for them.
func (e *env) restartResume(t *testing.T) {
	const ns = "s31-resume"
	e.namespace(t, ns)
	notReady := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-ready"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{func() corev1.Container {
			c := container("app", sh(gracefulApp)...)
			c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 2,
				ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}
			return c
		}()}}})
	failed := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "failed"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{container("job", sh("sleep 1; exit 1")...)}}})
	oneStartup := func(tr *backends.Trace) error {
		if n := len(tr.Named(names.SpanPodStartup)); n != 1 {
			return fmt.Errorf("%d pod.startup spans, want 1", n)
		}
		return nil
	}
	for _, p := range []*corev1.Pod{notReady, failed} {
		e.trace(t, string(p.UID), 2*time.Minute, oneStartup)
	}
	e.replaceTracer(t, "31")
	e.checkpointLoaded(t)
	// The new tracer's start-up timers run within a second of its API
	// list; give them and the export ample time.
	time.Sleep(45 * time.Second)
	for _, p := range []*corev1.Pod{notReady, failed} {
		tr := e.trace(t, string(p.UID), time.Minute, func(*backends.Trace) error { return nil })
		t.Logf("scenario 31: %s after the restart:\n%s", p.Name, tr)
		if err := oneStartup(tr); err != nil {
			t.Errorf("scenario 31: %s: %v (a start-up decided again after the restart)", p.Name, err)
		}
		if err := noSpanTwice(tr); err != nil {
			t.Errorf("scenario 31: %s: %v (told again after the restart)", p.Name, err)
		}
	}
}

// noSpanTwice: the back end received each span ID once.
func noSpanTwice(tr *backends.Trace) error {
	seen := map[string]bool{}
	for _, s := range tr.Spans {
		if seen[s.SpanID] {
			return fmt.Errorf("span %s %s received twice", s.SpanID, s.Name)
		}
		seen[s.SpanID] = true
	}
	return nil
}

// checkpointLoaded: the tracer that replaced the previous one read the
// previous one's checkpoint (internal/checkpoint, in the run's own node
// directory, env.stateDir, which the first tracer found empty) and found
// the span IDs it emitted.
func (e *env) checkpointLoaded(t *testing.T) {
	t.Helper()
	e.eventually(t, "the new tracer's checkpoint line", 30*time.Second, func() error {
		p, err := e.tracerPod("")
		if err != nil {
			return err
		}
		logs, err := e.cs.CoreV1().Pods(podchronNS).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(e.ctx)
		if err != nil {
			return err
		}
		m := regexp.MustCompile(`msg=checkpoint .*span_ids=(\d+)`).FindSubmatch(logs)
		if m == nil {
			return fmt.Errorf("no checkpoint line in %s's log", p.Name)
		}
		if n, _ := strconv.Atoi(string(m[1])); n == 0 {
			return fmt.Errorf("%s found no span IDs in the checkpoint: %s", p.Name, m[0])
		}
		t.Logf("scenario 31: %s", m[0])
		return nil
	})
}
