package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/test/e2e/backends"
	"github.com/podchron/podchron/test/harness/containerd"
)

// Scenarios 10–16: pods that go wrong in the other common ways (never
// Ready, kubelet-side stops, OOM of a child, a spoofed sender, an overrun
// that belongs to one stop), each asserted on what Jaeger holds.
func (e *env) longTail(t *testing.T) {
	t.Run("10a-image-pull-failure", e.imagePullFailure)
	t.Run("10b-config-error", e.configError)
	t.Run("10c-job-completes-before-ready", e.jobBeforeReady)
	t.Run("11-graceful-exit-143", e.gracefulExit143)
	t.Run("12-sender-named-runc", e.senderNamedRunc)
	t.Run("13-oom-kill-of-a-child", e.childOOM)
	t.Run("60-oom-kill-of-a-bystander", e.bystanderOOM)
	t.Run("14-overrun-belongs-to-its-stop", e.overrunOnce)
	t.Run("15-eviction-api", e.evictionAPI)
	t.Run("16-active-deadline", e.activeDeadline)
	t.Run("17-job-with-sidecar", e.jobWithSidecar)
	t.Run("18-readiness-never-passes", e.readinessNeverPasses)
	t.Run("19-init-crashloop", e.initCrashLoop)
	t.Run("20-startup-probe-restart", e.startupProbeRestart)
	t.Run("22-event-from-another-namespace", e.spoofedEvent)
	t.Run("23-static-pod", e.staticPod)
	t.Run("24-sandbox-changed", e.sandboxChanged)
	t.Run("25-preemption", e.preemption)
	t.Run("26-image-stopsignal", e.imageStopSignal)
	t.Run("29-conventions-and-filters", e.conventionsAndFilters)
}

func waitingReason(reasons ...string) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil {
				for _, r := range reasons {
					if w.Reason == r {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("no container waiting for %v", reasons)
	}
}

// countEvents: how many of the span's events have that name.
func countEvents(s *backends.Span, name string) int {
	n := 0
	for _, ev := range s.Events {
		if ev.Name == name {
			n++
		}
	}
	return n
}

func hasEvent(s *backends.Span, name string, where func(map[string]any) bool) bool {
	for _, ev := range s.Events {
		if ev.Name == name && (where == nil || where(ev.Fields)) {
			return true
		}
	}
	return false
}

// ---- 10a: an image that cannot be pulled -------------------------------------

func (e *env) imagePullFailure(t *testing.T) {
	t.Parallel()
	const ns = "s10a-pull"
	e.namespace(t, ns)
	// Nothing serves images here: a pull from the loopback registry fails
	// at once, and the kubelet backs off.
	app := corev1.Container{Name: "app", Image: "localhost:5999/podchron-e2e/absent:1", ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sleep", "3600"}}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unpullable"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	e.waitPod(t, ns, pod.Name, "in image pull back-off", 2*time.Minute, waitingReason("ImagePullBackOff"))
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		st := pk.one(names.SpanPodStartup)
		sb := pk.one(names.SpanPodSandbox)
		pull := pk.one(names.SpanContainerImagePull, ctrName("app"))
		pk.one("pod")
		if pk.err != nil {
			return pk.err
		}
		if len(tr.Find(func(s *backends.Span) bool { return strings.HasPrefix(s.Name, "cni.ADD ") })) == 0 {
			return errors.New("no cni.ADD span")
		}
		reason := st.Str(names.WaitingReason)
		if reason != "ImagePullBackOff" && reason != "ErrImagePull" {
			return fmt.Errorf("pod.startup waiting reason %q", reason)
		}
		if !st.Error || !pull.Error || sb.Error {
			return fmt.Errorf("status: startup error=%v pull error=%v sandbox error=%v", st.Error, pull.Error, sb.Error)
		}
		// Ended by the deletion, or by the e2e's 45 s give-up if the
		// back-off took that long.
		if o := st.Str(names.StartupOutcome); o != "terminated" && o != "gave_up" {
			return fmt.Errorf("pod.startup outcome %q", o)
		}
		return firstErr(childOf(tr, pull, st), childOf(tr, sb, st), attr(st, names.K8sContainerName, "app"),
			attr(pull, names.ContainerImageName, "localhost:5999/podchron-e2e/absent"), attr(pull, names.ContainerImageTags, "[1]")) // a string array, as api/v3 types it
	})
	report(t, tr)
	st, _ := only(tr, names.SpanPodStartup)
	t.Logf("scenario 10a: pod.startup %s: %s", st.Duration.Round(time.Millisecond), st.Str("otel.status_description"))
}

// ---- 10b: a missing ConfigMap ------------------------------------------------

func (e *env) configError(t *testing.T) {
	t.Parallel()
	const ns = "s10b-config"
	e.namespace(t, ns)
	app := container("app", "sleep", "3600")
	app.Env = []corev1.EnvVar{{Name: "SETTING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "absent-settings"}, Key: "setting"}}}}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "misconfigured"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	e.waitPod(t, ns, pod.Name, "in CreateContainerConfigError", 2*time.Minute, waitingReason("CreateContainerConfigError"))
	time.Sleep(2 * time.Second) // the tracer sees the status too
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		st, err := only(tr, names.SpanPodStartup)
		if err != nil {
			return err
		}
		if !st.Error || !strings.Contains(st.Str("otel.status_description"), "absent-settings") {
			return fmt.Errorf("pod.startup error=%v %q", st.Error, st.Str("otel.status_description"))
		}
		if len(tr.Named(names.SpanContainerRun)) != 0 {
			return errors.New("a container.run for a container that never ran")
		}
		return attr(st, names.WaitingReason, "CreateContainerConfigError")
	})
	report(t, tr)
}

// ---- 10c: a Job's pod that completes before it is ever Ready -----------------

func (e *env) jobBeforeReady(t *testing.T) {
	t.Parallel()
	const ns = "s10c-job"
	e.namespace(t, ns)
	// Without a readiness probe the pod is Ready for the second its work
	// runs, if the kubelet's status gets out in time; with one that never
	// passes, it is never Ready.
	work := container("work", sh("sleep 1; exit 0")...)
	work.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"cat", "/tmp/never"}}}, PeriodSeconds: 1}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "oneshot"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{work}}})
	e.waitPod(t, ns, pod.Name, "Succeeded", 2*time.Minute, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	// The start-up ends with the pod's work, long before the pod is gone.
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		st := pk.one(names.SpanPodStartup)
		run := pk.one(names.SpanContainerRun, ctrName("work"))
		if pk.err != nil {
			return pk.err
		}
		if st.Error || run.Error {
			return fmt.Errorf("errors: startup %v run %v", st.Error, run.Error)
		}
		return firstErr(attr(st, names.StartupOutcome, "completed"), attr(run, names.ExitCause, "completed"))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// ---- 11: SIGTERM handled, exit 143 -------------------------------------------

func (e *env) gracefulExit143(t *testing.T) {
	t.Parallel()
	const ns = "s11-exit143"
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "polite"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("app", sh(`trap 'exit 143' TERM; while :; do sleep 1 & wait $!; done`)...)}}})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		stop := pk.one(names.SpanContainerStop, ctrName("app"))
		term := pk.one(names.SpanPodTermination)
		if pk.err != nil {
			return pk.err
		}
		if run.Error || stop.Error || term.Error {
			return fmt.Errorf("a graceful stop shown as an error: run %v stop %v termination %v", run.Error, stop.Error, term.Error)
		}
		return firstErr(attr(run, names.ExitCause, "completed"), attr(run, names.ProcessExitCode, "143"),
			attr(stop, names.SignalName, "SIGTERM"), attr(stop, names.SignalDisposition, "handler"))
	})
	report(t, tr)
}

// ---- 12: a sender in the pod named runc ---------------------------------------

func (e *env) senderNamedRunc(t *testing.T) {
	t.Parallel()
	const ns = "s12-spoof"
	e.namespace(t, ns)
	share := true
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "target"},
		Spec: corev1.PodSpec{ShareProcessNamespace: &share, Containers: []corev1.Container{
			container("app", "sleep", "3602"),
			container("sidecar", "tail", "-f", "/dev/null"),
		}}})
	time.Sleep(2 * time.Second)
	// A shell renames itself runc (its comm) and kills with its builtin.
	out, err := e.cluster.Kubectl(e.ctx, "exec", "-n", ns, pod.Name, "-c", "sidecar", "--", "sh", "-c",
		`printf runc > /proc/self/comm; kill -9 $(pidof sleep)`)
	if err != nil {
		t.Fatalf("kubectl exec: %v\n%s", err, out)
	}
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		r, err := only(tr, names.SpanContainerRun, ctrName("app"))
		if err != nil {
			return err
		}
		return firstErr(attr(r, names.ExitCause, "killed_in_pod"), attr(r, names.SignalSenderKind, "in_pod"),
			attr(r, names.SignalSenderComm, "runc"))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// ---- 13: the OOM killer takes a child, the container goes on -------------------

func (e *env) childOOM(t *testing.T) {
	t.Parallel()
	// One container with a limit: the pod-level cgroup (same limit, plus
	// the pause container) is the one that runs out.
	e.oomOfAChild(t, "s13-child-oom", "parent", `sleep 1; dd if=/dev/zero of=/dev/null bs=96M count=1; touch /tmp/survived`,
		"48Mi", "dd", nil)
}

// oomOfAChild runs a pod of one container (script, then a graceful
// loop, under the memory limit) whose script has a child OOM-killed and
// then touches /tmp/survived; once it has, the pod is deleted and its run
// checked in Jaeger: an oom_kill event naming the victim and the pod's
// limit (scope pod), the run completed, and check (nil for none).
func (e *env) oomOfAChild(t *testing.T, ns, name, script, limit, victim string, check func(run *backends.Span) error) {
	t.Helper()
	e.namespace(t, ns)
	app := container("app", sh(`trap 'exit 0' TERM; `+script+`; while :; do sleep 1 & wait $!; done`)...)
	app.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	e.eventually(t, "the shell outlived "+victim+"'s OOM kill", time.Minute, func() error {
		out, err := e.cluster.Kubectl(e.ctx, "exec", "-n", ns, pod.Name, "--", "ls", "/tmp/survived")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		r, err := only(tr, names.SpanContainerRun, ctrName("app"))
		if err != nil {
			return err
		}
		if !hasEvent(r, names.EventOOMKill, func(f map[string]any) bool {
			return fmt.Sprint(f[names.OOMVictimComm]) == victim && fmt.Sprint(f[names.OOMScope]) == "pod"
		}) {
			return fmt.Errorf("no oom_kill event naming the victim %s and the pod's limit (scope pod) on the run; its OOM kills: %s", victim, oomKills(r))
		}
		if check != nil {
			if err := check(r); err != nil {
				return err
			}
		}
		if r.Error {
			// containerd reports OOMKilled for a container whose cgroup
			// saw any OOM kill: the kernel's facts say the init exited 0.
			return errors.New("the run is an error: its init was never OOM-killed")
		}
		return attr(r, names.ExitCause, "completed")
	})
	report(t, tr)
}

// oomKills lists a span's oom_kill events (victim, scope, memory cgroup),
// for a failure's message.
func oomKills(s *backends.Span) string {
	var out []string
	for _, ev := range s.Events {
		if ev.Name == names.EventOOMKill {
			out = append(out, fmt.Sprintf("{victim %v pid %v scope %v memcg %v}", ev.Fields[names.OOMVictimComm],
				ev.Fields[names.OOMVictimPID], ev.Fields[names.OOMScope], ev.Fields[names.OOMMemcg]))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// ---- 60: the OOM killer takes a bystander ---------------------------------------

// The task that hits the limit is not the one killed: awk holds 48 MB and
// sleeps (it says so once its string is whole: while it still fills it,
// it may hit the limit itself, as the 1.37 leg did on 2026-12-06); dd then
// allocates 40 MB and runs the pod out of its 80 Mi. The OOM killer runs in
// dd's context (or a kubectl exec's starting then) and picks awk, the
// biggest; dd goes on.
// Neither is the container's init, so neither was ever reported by the
// probes: the kill is put on the run from the victim's own cgroup (its
// SIGKILL, on the same CPU just before). So is any kill in a pod whose
// OOM is hit by another process than the victim (a worker allocating, a
// cache holding; a kubectl exec starting while a big process runs: seen
// in scenario 13 on 2026-12-06's CI).
func (e *env) bystanderOOM(t *testing.T) {
	t.Parallel()
	const ns = "s60-bystander-oom"
	e.oomOfAChild(t, ns, "shared", `awk 'BEGIN { s = sprintf("%48000000s", "x"); print "" > "/tmp/held"; close("/tmp/held"); system("sleep 3600") }' & `+
		`until [ -f /tmp/held ]; do sleep 0.2; done; `+
		`dd if=/dev/zero of=/dev/null bs=40M count=1 && touch /tmp/survived`, "80Mi", "awk",
		func(r *backends.Span) error {
			// The OOM killer's SIGKILL names the task it ran in as its sender.
			if hasEvent(r, names.SignalEventName("SIGKILL"), func(f map[string]any) bool {
				return fmt.Sprint(f[names.SignalSenderKind]) == "kernel" && fmt.Sprint(f[names.SignalSenderComm]) == "awk"
			}) {
				return errors.New("the OOM killer ran in awk itself: the scenario made no bystander victim")
			}
			return nil
		})
	v := e.metric(t, fmt.Sprintf(`sum(podchron_oom_kills_total{namespace=%q,scope="pod"})`, ns), time.Minute,
		func(v float64) bool { return v == 1 })
	t.Logf("scenario 60: podchron_oom_kills_total{scope=\"pod\"} = %v", v)
}

// ---- 14: an overrun belongs to its stop ---------------------------------------

func (e *env) overrunOnce(t *testing.T) {
	t.Parallel()
	const ns = "s14-overrun-once"
	e.namespace(t, ns)
	// The first attempt ignores SIGTERM and fails its liveness probe: the
	// kubelet kills it at the end of the grace period. The second handles
	// SIGTERM; the pod's deletion is then clean.
	app := container("app", sh(`if [ -f /state/second ]; then trap 'exit 0' TERM; touch /tmp/healthy; `+
		`else touch /state/second; trap '' TERM; touch /tmp/healthy; (sleep 3; rm -f /tmp/healthy) & fi; `+
		`while :; do sleep 1 & wait $!; done`)...)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/state"}}
	app.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"cat", "/tmp/healthy"}}}, PeriodSeconds: 1, FailureThreshold: 2}
	grace := int64(2)
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "once"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{app},
			Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}})
	e.waitPod(t, ns, pod.Name, "restarted by liveness and Ready", 2*time.Minute, func(p *corev1.Pod) error {
		if err := restarted(1)(p); err != nil {
			return err
		}
		return ready(p)
	})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		term, err := only(tr, names.SpanPodTermination)
		if err != nil {
			return err
		}
		stops := tr.Named(names.SpanContainerStop)
		if len(stops) != 2 {
			return fmt.Errorf("%d container.stop spans, want the liveness restart's and the deletion's", len(stops))
		}
		if stops[0].Str(names.Sigkill) != "true" {
			return fmt.Errorf("the liveness restart's stop: sigkill %q", stops[0].Str(names.Sigkill))
		}
		if term.Error {
			return fmt.Errorf("the clean deletion is an error: %s", term.Str("otel.status_description"))
		}
		return attr(term, names.GracePeriodOverrun, "false")
	})
	report(t, tr)
}

// ---- 15: a drain (the Eviction API) ---------------------------------------------

func (e *env) evictionAPI(t *testing.T) {
	t.Parallel()
	const ns = "s15-evict"
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "drained"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	time.Sleep(2 * time.Second)
	if err := e.cs.PolicyV1().Evictions(ns).Evict(e.ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}); err != nil {
		t.Fatalf("evict: %v", err)
	}
	e.waitGone(t, ns, pod.Name, time.Minute)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		term := pk.one(names.SpanPodTermination)
		if pk.err != nil {
			return pk.err
		}
		if run.Error {
			return errors.New("a drained container that stopped in time is shown as an error")
		}
		return firstErr(attr(run, names.ExitCause, "evicted"), attr(run, names.DisruptionReason, "EvictionByEvictionAPI"),
			attr(term, names.TerminationReason, "EvictionByEvictionAPI"))
	})
	report(t, tr)
}

// ---- 16: activeDeadlineSeconds: the kubelet ends the pod, no deletion ---------

func (e *env) activeDeadline(t *testing.T) {
	t.Parallel()
	const ns = "s16-deadline"
	e.namespace(t, ns)
	pod := e.createPod(t, ns, deadlinePod(6))
	e.deadlineEnd(t, pod)
}

// deadlinePod is a pod "bounded" of one container, "app", that exits 0 on
// SIGTERM, with activeDeadlineSeconds seconds and restartPolicy Never.
func deadlinePod(seconds int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bounded"},
		Spec: corev1.PodSpec{ActiveDeadlineSeconds: &seconds, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}}
}

// deadlineEnd waits for the pod's deadline to fail it, deletes it, and
// asserts its trace: one pod.termination that says DeadlineExceeded and
// begins at the kubelet's stop of "app", whose container.stop is under it.
func (e *env) deadlineEnd(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	e.waitPod(t, pod.Namespace, pod.Name, "failed by its deadline", 2*time.Minute, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "DeadlineExceeded" {
			return fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	e.deleteAndWait(t, pod.Namespace, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		term := pk.one(names.SpanPodTermination)
		stop := pk.one(names.SpanContainerStop, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		if d := stop.Start.Sub(term.Start); d < 0 || d > time.Second {
			return fmt.Errorf("the termination starts %s before the kubelet's stop", d)
		}
		if stop.ParentID != term.SpanID {
			return fmt.Errorf("the container's stop is not under the termination (parent %s)", stop.ParentID)
		}
		return attr(term, names.TerminationReason, "DeadlineExceeded")
	})
	report(t, tr)
}

// ---- 61: a deadline passes while the API server stalls ------------------------

// Scenario 61: the pod's activeDeadlineSeconds passes while the API server
// is stopped (SIGSTOP). The kubelet stops the container and removes the
// pod's cgroup on its own; its status (Failed, DeadlineExceeded) reaches
// the API server, and the tracer's watch, only after the resume. The
// trace waits for the status: a termination that begins at the kubelet's
// stop and says why, not a pod that ended for no reason. CI's 1.37 leg met
// this order without a pause on 2026-12-06 (scenario 16: the watch
// delivered the status after the cgroup's removal). Serial: every other
// scenario needs the API server.
func (e *env) deadlineWhileAPIPaused(t *testing.T) {
	const ns = "s61-deadline-api-paused"
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, deadlinePod(12)) // Ready before its deadline, on a loaded node
	if len(podCgroupDirs(pod.UID)) == 0 {
		t.Fatalf("no cgroup directory pod%s under /sys/fs/cgroup: the kubelet's cgroupfs layout changed", pod.UID)
	}
	resume, err := e.cluster.PauseAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resume() })
	paused := time.Now()
	var goneAfter time.Duration
	for goneAfter == 0 && time.Since(paused) < 45*time.Second {
		time.Sleep(100 * time.Millisecond)
		if len(podCgroupDirs(pod.UID)) == 0 {
			goneAfter = time.Since(paused)
		}
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	if goneAfter == 0 {
		t.Fatalf("the pod's cgroup was still there %s into the API server's pause: %v", time.Since(paused).Round(time.Second), podCgroupDirs(pod.UID))
	}
	t.Logf("scenario 61: the API server paused %s; the pod's cgroup went %s into it",
		time.Since(paused).Round(time.Millisecond), goneAfter.Round(time.Millisecond))
	e.deadlineEnd(t, pod)
}

// podCgroupDirs lists the pod's cgroup directories (the kubelet's cgroupfs
// layout under /kubepods, on cgroup v1 controllers and v2).
func podCgroupDirs(uid types.UID) []string {
	var dirs []string
	for _, pat := range []string{"/sys/fs/cgroup/*/kubepods/pod%s", "/sys/fs/cgroup/*/kubepods/*/pod%s",
		"/sys/fs/cgroup/kubepods/pod%s", "/sys/fs/cgroup/kubepods/*/pod%s"} {
		m, _ := filepath.Glob(fmt.Sprintf(pat, uid))
		dirs = append(dirs, m...)
	}
	return dirs
}

// ---- 17: a Job's pod with a native sidecar ---------------------------------------

func (e *env) jobWithSidecar(t *testing.T) {
	t.Parallel()
	const ns = "s17-sidecar"
	e.namespace(t, ns)
	always := corev1.ContainerRestartPolicyAlways
	proxy := container("proxy", sh(gracefulApp)...)
	proxy.RestartPolicy = &always
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: []corev1.Container{proxy},
			Containers: []corev1.Container{container("work", sh("sleep 2")...)}}})
	e.waitPod(t, ns, pod.Name, "Succeeded", 2*time.Minute, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		term := pk.one(names.SpanPodTermination)
		side := pk.one(names.SpanContainerRun, ctrName("proxy"))
		work := pk.one(names.SpanContainerRun, ctrName("work"))
		if pk.err != nil {
			return pk.err
		}
		if side.Error || work.Error {
			return fmt.Errorf("errors: sidecar %v work %v (%s)", side.Error, work.Error, side.Str(names.ExitCause))
		}
		if !term.Start.After(work.End()) {
			return fmt.Errorf("the termination starts %s, before the work ended %s", term.Start, work.End())
		}
		return firstErr(attr(term, names.TerminationReason, "Completed"), attr(work, names.ExitCause, "completed"))
	})
	report(t, tr)
}

// ---- 18: a readiness probe that never passes ----------------------------------

func (e *env) readinessNeverPasses(t *testing.T) {
	t.Parallel()
	const ns = "s18-never-ready"
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	app.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"cat", "/tmp/never"}}}, PeriodSeconds: 2}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unready"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	// The tracer gives up after 45 s (the e2e's --startup-timeout): the
	// failed start-up is in Jaeger while the pod still lives.
	tr := e.trace(t, string(pod.UID), 90*time.Second, func(tr *backends.Trace) error {
		st, err := only(tr, names.SpanPodStartup)
		if err != nil {
			return err
		}
		if len(tr.Named("pod")) != 0 {
			return errors.New("the pod's root span is out: it should still be alive")
		}
		if !st.Error {
			return errors.New("pod.startup is not an error")
		}
		if n := len(tr.Find(func(s *backends.Span) bool { return s.Name == "probe.readiness" && s.Error })); n == 0 {
			return errors.New("no failed probe.readiness span")
		}
		return firstErr(attr(st, names.StartupOutcome, "gave_up"), attr(st, names.WaitingReason, "NotReady"),
			attr(st, names.K8sContainerName, "app"))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// ---- 19: Init:CrashLoopBackOff ----------------------------------------------------

func (e *env) initCrashLoop(t *testing.T) {
	t.Parallel()
	const ns = "s19-init-crash"
	e.namespace(t, ns)
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "blocked"},
		Spec: corev1.PodSpec{InitContainers: []corev1.Container{container("setup", sh("sleep 0.5; exit 3")...)},
			Containers: []corev1.Container{container("app", "sleep", "3604")}}})
	// Deleted only once the API says what the startup waits on (back-off,
	// or the second run's exit): under load, deleting 2 s after the restart
	// count rose once came before the kubelet wrote CrashLoopBackOff, and
	// the trace then rightly had no waiting reason (stack k8s137, 2026-11-25).
	e.waitPod(t, ns, pod.Name, "init container restarted and waiting", 2*time.Minute, func(p *corev1.Pod) error {
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.RestartCount >= 1 && (cs.State.Terminated != nil || cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff") {
				return nil
			}
		}
		return errors.New("no init restart and back-off yet")
	})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		st, err := only(tr, names.SpanPodStartup)
		if err != nil {
			return err
		}
		inits := tr.Named(names.SpanContainerInit)
		if len(inits) < 2 {
			return fmt.Errorf("%d container.init spans, want the failed runs", len(inits))
		}
		for _, r := range inits {
			if err := firstErr(childOf(tr, r, st), attr(r, names.ProcessExitCode, "3")); err != nil {
				return err
			}
			if !r.Error {
				return errors.New("a failed init run is not an error")
			}
		}
		if len(tr.Named(names.SpanContainerBackoff)) == 0 {
			return errors.New("no container.backoff between the init runs")
		}
		if r := st.Str(names.WaitingReason); r != "CrashLoopBackOff" && r != "Terminated" {
			return fmt.Errorf("pod.startup waiting reason %q", r)
		}
		if !st.Error {
			return errors.New("pod.startup is not an error")
		}
		return attr(st, names.K8sContainerName, "setup")
	})
	report(t, tr)
}

// ---- 20: a startup probe that fails; startup and liveness share a command ----------

func (e *env) startupProbeRestart(t *testing.T) {
	t.Parallel()
	const ns = "s20-startup-probe"
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	check := &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}
	app.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: check}, PeriodSeconds: 1, FailureThreshold: 2}
	app.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: check}, PeriodSeconds: 1, FailureThreshold: 2}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "slowstart"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	e.waitPod(t, ns, pod.Name, "restarted by its startup probe", 2*time.Minute, restarted(1))
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		runs := tr.Named(names.SpanContainerRun)
		if len(runs) == 0 {
			return errors.New("no container.run span")
		}
		if n := len(tr.Named("probe.liveness")); n != 0 {
			return fmt.Errorf("%d probe.liveness spans before the container ever started", n)
		}
		if len(tr.Find(func(s *backends.Span) bool { return s.Name == "probe.startup" && s.Error })) == 0 {
			return errors.New("no failed probe.startup span")
		}
		return attr(runs[0], names.ExitCause, "startup_probe_restart")
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// ---- 21: containerd restarts for a moment ---------------------------------------

// runtimeRestart: the runtime goes away for a moment and comes back. The
// pod alive across the gap says so (degraded, a gap event on its root); a pod
// created after it is whole (no span degraded).
func (e *env) runtimeRestart(t *testing.T) {
	const ns = "s21-runtime-restart"
	e.namespace(t, ns)
	before := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "across"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	t0 := time.Now()
	if err := e.runtime.StopDaemon(e.ctx); err != nil {
		t.Fatalf("stop containerd: %v", err)
	}
	time.Sleep(2500 * time.Millisecond) // a restart the tracer's 1 s polls see
	if err := e.runtime.StartDaemon(e.ctx); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Logf("scenario 21: containerd away for %s", time.Since(t0).Round(time.Millisecond))
	e.metric(t, `podchron_source_up{source="runtime"}`, time.Minute, func(v float64) bool { return v == 1 })
	time.Sleep(3 * time.Second)
	after := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	time.Sleep(2 * time.Second)
	e.deletePod(t, ns, after.Name)
	e.deletePod(t, ns, before.Name)
	e.waitGone(t, ns, after.Name, time.Minute)
	e.waitGone(t, ns, before.Name, time.Minute)
	tr := e.trace(t, string(after.UID), time.Minute, func(tr *backends.Trace) error {
		if len(tr.Named("pod")) != 1 {
			return errors.New("no root span yet")
		}
		for _, s := range tr.Spans {
			if d := s.Str(names.Degraded); d != "" {
				return fmt.Errorf("%s of a pod created after the runtime came back is degraded: %s", s.Name, d)
			}
		}
		return nil
	})
	report(t, tr)
	tr = e.trace(t, string(before.UID), time.Minute, func(tr *backends.Trace) error {
		root, err := only(tr, "pod")
		if err != nil {
			return err
		}
		if !strings.Contains(root.Str(names.Degraded), "runtime unavailable") {
			return fmt.Errorf("the root of a pod alive across the gap: degraded %q", root.Str(names.Degraded))
		}
		if !hasEvent(root, names.EventRuntimeGap, nil) {
			return errors.New("no podchron.runtime_gap event on the root")
		}
		return nil
	})
	report(t, tr)
}

// ---- 22: an Event from another namespace naming the pod's UID ---------------------

// spoofedEvent: whoever may create Events in their own namespace can name any
// pod's UID in one. Such an Event (a "Killing ... failed liveness probe")
// must not change the cause of the pod's run.
func (e *env) spoofedEvent(t *testing.T) {
	t.Parallel()
	const ns, other = "s22-victim", "s22-other"
	e.namespace(t, ns)
	e.namespace(t, other)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "target"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	now := metav1.Now()
	if _, err := e.cs.CoreV1().Events(other).Create(e.ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "spoof", Namespace: other},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: other, Name: pod.Name, UID: pod.UID,
			FieldPath: "spec.containers{app}"},
		Reason: "Killing", Message: "Container app failed liveness probe, will be restarted", Type: "Normal",
		Source: corev1.EventSource{Component: "kubelet"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the spoofed event: %v", err)
	}
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		root := pk.one("pod")
		if pk.err != nil {
			return pk.err
		}
		// (The kubelet's own Killing, "Stopping container app", at the
		// deletion is the pod's.)
		if hasEvent(root, "k8s.Killing", func(f map[string]any) bool { return strings.Contains(fmt.Sprint(f["message"]), "liveness") }) {
			return errors.New("the other namespace's Event is on the pod's trace")
		}
		return attr(run, names.ExitCause, "completed")
	})
	report(t, tr)
}

// ---- 23: a static pod ---------------------------------------------------------------

// staticPod: the kubelet runs a manifest from its staticPodPath under the
// manifest's own UID (its config hash) and shows it in the API as a mirror
// pod with another UID. One trace, under the static pod's UID; deleting the
// mirror (the kubelet recreates it) does not end it; removing the manifest
// does.
func (e *env) staticPod(t *testing.T) {
	t.Parallel()
	const ns = "s23-static"
	e.namespace(t, ns)
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: pinned
  namespace: %s
spec:
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", %q]
`, ns, image, gracefulApp)
	path := filepath.Join(e.cluster.StaticPodDir(), "s23-pinned.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	mirrorName := "pinned-" + e.cluster.NodeName()
	first := e.waitPod(t, ns, mirrorName, "the mirror Ready", 2*time.Minute, ready)
	hash := first.Annotations["kubernetes.io/config.mirror"]
	if hash == "" || hash == string(first.UID) {
		t.Fatalf("mirror pod annotations %v, UID %s", first.Annotations, first.UID)
	}
	// The mirror is deleted; the kubelet makes a new one, the pod runs on.
	e.deletePod(t, ns, mirrorName)
	second := e.waitPod(t, ns, mirrorName, "a new mirror", time.Minute, func(p *corev1.Pod) error {
		if p.UID == first.UID {
			return errors.New("still the first mirror")
		}
		return ready(p)
	})
	time.Sleep(2 * time.Second)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, ns, mirrorName, 2*time.Minute)
	tr := e.trace(t, hash, 90*time.Second, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one("pod")
		pk.one(names.SpanPodStartup)
		term := pk.one(names.SpanPodTermination)
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		return firstErr(resAttr(root, names.K8sPodUID, hash), resAttr(root, names.PodMirrorUID, string(second.UID)),
			attr(term, names.TerminationReason, "StaticPodRemoved"), attr(run, names.ExitCause, "completed"))
	})
	report(t, tr)
	for _, m := range []*corev1.Pod{first, second} {
		if got, err := e.jaeger.Trace(e.ctx, span.TraceIDForPod(string(m.UID)).String()); err == nil && len(got.Spans) > 0 {
			t.Errorf("a second trace under the mirror UID %s: %d spans", m.UID, len(got.Spans))
		}
	}
}

// ---- 24: the sandbox dies (SandboxChanged) ---------------------------------------

// sandboxChanged: the pod's pause process is killed; the kubelet stops the
// containers, runs a new sandbox with a new network and starts them again.
// The new sandbox is a span of its own under the root, with its CNI ADDs.
func (e *env) sandboxChanged(t *testing.T) {
	t.Parallel()
	const ns = "s24-sandbox"
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resandboxed"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	time.Sleep(2 * time.Second)
	cli := e.runtime.CRI()
	sbs, err := cli.ListSandboxes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, sb := range sbs {
		if sb.PodUID == string(pod.UID) && sb.State == cri.SandboxReady {
			st, err := cli.SandboxStatus(e.ctx, sb.ID)
			if err != nil {
				t.Fatal(err)
			}
			pid = st.PID
		}
	}
	if pid <= 1 {
		t.Fatalf("no pause process found for pod %s", pod.UID)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the pause process %d: %v", pid, err)
	}
	e.waitPod(t, ns, pod.Name, "restarted in a new sandbox and Ready", 2*time.Minute, func(p *corev1.Pod) error {
		if err := restarted(1)(p); err != nil {
			return err
		}
		return ready(p)
	})
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		re := tr.Find(func(s *backends.Span) bool {
			return s.Name == names.SpanPodSandbox && s.Str(names.SandboxRecreated) == "true"
		})
		if len(re) != 1 {
			return fmt.Errorf("%d recreated pod.sandbox spans, want 1", len(re))
		}
		adds := tr.Find(func(s *backends.Span) bool {
			return strings.HasPrefix(s.Name, "cni.ADD ") && s.ParentID == re[0].SpanID
		})
		if len(adds) == 0 {
			return errors.New("no cni.ADD under the new sandbox")
		}
		return nil
	})
	report(t, tr)
	e.deleteAndWait(t, ns, pod.Name)
	e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		root, err := only(tr, "pod")
		if err != nil {
			return err
		}
		if !hasEvent(root, names.EventSandboxChanged, nil) {
			return errors.New("no podchron.sandbox_changed event on the root")
		}
		return nil
	})
}

// ---- 25: preemption ------------------------------------------------------------------

// preemption: a pod of higher priority that does not fit makes the
// scheduler preempt a lower one (DisruptionTarget PreemptionByScheduler,
// then a deletion). The victim's termination and run say so.
func (e *env) preemption(t *testing.T) {
	t.Parallel()
	const ns = "s25-preempt"
	e.namespace(t, ns)
	for name, v := range map[string]int32{"s25-low": 10, "s25-high": 1000} {
		if _, err := e.cs.SchedulingV1().PriorityClasses().Create(e.ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("priority class %s: %v", name, err)
		}
		defer e.cs.SchedulingV1().PriorityClasses().Delete(e.ctx, name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	}
	cpuPod := func(name, class, cpu string) *corev1.Pod {
		c := container("app", sh(gracefulApp)...)
		c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
		grace := int64(5)
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{PriorityClassName: class, TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{c}}}
	}
	// The node has 2 CPUs: 1.2 + 1.2 do not fit together.
	low := e.readyPod(t, ns, cpuPod("low", "s25-low", "1200m"))
	time.Sleep(2 * time.Second)
	high := e.createPod(t, ns, cpuPod("high", "s25-high", "1200m"))
	e.waitGone(t, ns, low.Name, 2*time.Minute)
	e.waitPod(t, ns, high.Name, "Ready", 2*time.Minute, ready)
	tr := e.trace(t, string(low.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		term := pk.one(names.SpanPodTermination)
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		return firstErr(attr(term, names.TerminationReason, "PreemptionByScheduler"), attr(run, names.ExitCause, "preempted"),
			attr(run, names.DisruptionReason, "PreemptionByScheduler"))
	})
	report(t, tr)
	e.deleteAndWait(t, ns, high.Name)
}

// ---- 26: an image's STOPSIGNAL ----------------------------------------------------

// imageStopSignal: an image whose STOPSIGNAL is SIGQUIT; the runtime stops
// its container with SIGQUIT, which the app handles. The stop is that
// signal, and the run ended gracefully.
func (e *env) imageStopSignal(t *testing.T) {
	t.Parallel()
	const ns = "s26-stopsignal"
	e.namespace(t, ns)
	const img = "localhost/podchron-e2e/quitter:1"
	if _, err := e.runtime.ImportImage(e.ctx, containerd.Image{Name: img, StopSignal: "SIGQUIT"}); err != nil {
		t.Fatalf("import %s: %v", img, err)
	}
	app := corev1.Container{Name: "app", Image: img, ImagePullPolicy: corev1.PullNever,
		Command: sh(`trap 'exit 0' QUIT; trap '' TERM; while :; do sleep 1 & wait $!; done`)}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quitter"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	e.wantHandledStop(t, pod, "SIGQUIT")
}

// wantHandledStop: the deleted pod's app container was stopped by sig
// (not SIGTERM: the image's or the pod's stop signal), which it handled:
// container.stop is sig, handled, with no SIGKILL, within 3 s; the run a
// clean completion; nothing an error.
func (e *env) wantHandledStop(t *testing.T, pod *corev1.Pod, sig string) {
	t.Helper()
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		stop := pk.one(names.SpanContainerStop, ctrName("app"))
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		term := pk.one(names.SpanPodTermination)
		if pk.err != nil {
			return pk.err
		}
		if stop.Error || run.Error || term.Error {
			return fmt.Errorf("a graceful %s stop shown as an error: stop %v run %v termination %v", sig, stop.Error, run.Error, term.Error)
		}
		if stop.Duration > 3*time.Second {
			return fmt.Errorf("the stop took %s: the %s was not the stop", stop.Duration, sig)
		}
		return firstErr(attr(stop, names.SignalName, sig), attr(stop, names.SignalDisposition, "handler"),
			attr(stop, names.Sigkill, "false"), attr(run, names.ExitCause, "completed"))
	})
	report(t, tr)
}
