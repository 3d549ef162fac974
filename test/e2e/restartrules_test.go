package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
	"github.com/podchron/podchron/test/e2e/backends"
	"github.com/podchron/podchron/test/e2e/cluster"
)

// ---- 53-54: restart rules (Kubernetes 1.34+) and the in-place restart of a pod (1.35+) ----

// onceThenWait is a container command that exits with code the first time
// (a marker in the pod's emptyDir /data, which survives restarts) after
// two seconds, and runs gracefully after that.
func onceThenWait(marker string, code int) []string {
	return sh(fmt.Sprintf(`if [ -e /data/%[1]s ]; then %[2]s; fi; touch /data/%[1]s; sleep 2; exit %[3]d`, marker, gracefulApp, code))
}

// withData mounts the pod's emptyDir "data" at /data in the container.
func withData(c corev1.Container) corev1.Container {
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	return c
}

// ruledOnce is a container (restartPolicy Never) that exits with code once
// (onceThenWait, the marker in /data) and has one restart rule: action on
// that exit code.
func ruledOnce(name, marker string, code int32, action corev1.ContainerRestartRuleAction) corev1.Container {
	never := corev1.ContainerRestartPolicyNever
	c := withData(container(name, onceThenWait(marker, int(code))...))
	c.RestartPolicy = &never
	c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: action,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{code}}}}
	return c
}

var dataVolume = corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}

// restartRule: a pod that never restarts (restartPolicy Never) whose app
// has a restart rule for exit code 42 (ContainerRestartRules: beta and on
// by default since 1.35). The app exits 42 once; the kubelet restarts it
// by the rule. Its first run's cause is restart_rule, naming the rule; an
// ERROR (a non-zero exit); a second run follows.
func (e *env) restartRule(t *testing.T) {
	t.Parallel()
	const ns = "s53-restart-rule"
	e.namespace(t, ns)
	app := ruledOnce("app", "ran", 42, corev1.ContainerRestartRuleActionRestart)
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ruled"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Volumes: []corev1.Volume{dataVolume}, Containers: []corev1.Container{app}}})
	e.waitPod(t, ns, pod.Name, "restarted by its restart rule", 2*time.Minute, restarted(1))
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		r, err := firstRun(tr, "app")
		if err != nil {
			return err
		}
		if !r.Error {
			return fmt.Errorf("the exit 42 is not an error: %v", r.Tags)
		}
		return firstErr(attr(r, names.ExitCause, string(names.CauseRestartRule)),
			attr(r, names.RestartRule, "Restart on exit code In [42]"), attr(r, names.ProcessExitCode, "42"))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// restartAllContainers: a pod with an init container, an app and a
// watcher whose restart rule answers its exit 88 with RestartAllContainers
// (alpha in 1.35: the RestartAllContainersOnContainerExits gate, switched
// on in this cluster with PODCHRON_E2E_ALPHA_GATES=1; beta and on by
// default from 1.36, so on the 1.37 leg). The watcher exits 88 once:
// the kubelet stops the app, runs the init container again and starts both
// anew in the same sandbox, and the pod is Ready again. The trace: one
// pod.restart span from the watcher's exit, the init container's second
// run under it, the watcher's run restart_rule, the app's kubelet_restart
// (restart_all_containers), and no termination until the deletion.
func (e *env) restartAllContainers(t *testing.T) {
	t.Parallel()
	if on, err := e.cluster.GateOn(e.ctx, "RestartAllContainersOnContainerExits"); err != nil {
		t.Fatal(err)
	} else if !on {
		t.Skipf("the gate RestartAllContainersOnContainerExits is off in this cluster: alpha before 1.36 (set %s=1 to switch it on where the binaries know it; "+
			"off by default: with its dependency NodeDeclaredFeatures on, kubelet v1.35.4 panics on a static pod's mirror deletion)", cluster.AlphaGatesEnv)
	}
	const ns = "s54-restart-all"
	e.namespace(t, ns)
	watcher := ruledOnce("watcher", "watched", 88, corev1.ContainerRestartRuleActionRestartAllContainers)
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inplace"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{dataVolume},
			InitContainers: []corev1.Container{container("setup", "true")},
			Containers:     []corev1.Container{container("app", sh(gracefulApp)...), watcher}}})
	e.waitPod(t, ns, pod.Name, "restarted in place and Ready again", 3*time.Minute, func(p *corev1.Pod) error {
		n := map[string]int32{}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			n[cs.Name] = cs.RestartCount
		}
		if n["app"] < 1 || n["watcher"] < 1 {
			return fmt.Errorf("restart counts %v", n)
		}
		return ready(p)
	})
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		var p pick
		p.tr = tr
		r := p.one(names.SpanPodRestart)
		w := p.one(names.SpanContainerRun, ctrName("watcher"), func(s *backends.Span) bool { return s.Str(names.K8sContainerRestartCount) == "" })
		a := p.one(names.SpanContainerRun, ctrName("app"), func(s *backends.Span) bool { return s.Str(names.K8sContainerRestartCount) == "" })
		if p.err != nil {
			return p.err
		}
		// The init container's second run (the kubelet runs it again in the
		// same sandbox) is the one under pod.restart; the first is the
		// start-up's.
		inits := tr.Named(names.SpanContainerInit)
		if len(inits) != 2 {
			return fmt.Errorf("%d container.init spans, want 2 (the start-up's and the restart's)", len(inits))
		}
		init2 := inits[0]
		if inits[1].Start.After(init2.Start) {
			init2 = inits[1]
		}
		if msg := r.Str(names.Message); !strings.Contains(msg, "container watcher exited 88") {
			return fmt.Errorf("pod.restart names %q, not the watcher's exit", msg)
		}
		if root := span.RootSpanID(span.TraceIDForPod(string(pod.UID))).String(); r.ParentID != root {
			return fmt.Errorf("pod.restart's parent %s is not the root %s", r.ParentID, root)
		}
		return firstErr(childOf(tr, init2, r),
			attr(w, names.ExitCause, string(names.CauseRestartRule)),
			attr(a, names.ExitCause, string(names.CauseKubeletRestart)),
			attr(a, names.KubeletRestartReason, names.KubeletRestartAllContainers))
	})
	report(t, tr)
	if n := len(tr.Named(names.SpanPodTermination)); n != 0 {
		t.Errorf("%d pod.termination spans before the deletion of a pod restarted in place", n)
	}
	e.deletePod(t, ns, pod.Name)
}
