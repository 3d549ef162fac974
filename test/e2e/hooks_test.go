package e2e

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// ---- 40–42: hooks the kubelet runs itself ------------------------------------
//
// sleep and httpGet handlers are run by the kubelet, not in the container:
// the kernel sees nothing of them. Their container.prestop runs from the
// deletion to the runtime's stop signal; what they leave of the grace
// period is on the container's stop.

// floatTag reads a numeric tag.
func floatTag(s *backends.Span, key string) (float64, error) {
	v, err := strconv.ParseFloat(s.Str(key), 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s=%q: %w", s.Name, key, s.Str(key), err)
	}
	return v, nil
}

// deleteWithGrace deletes a pod with a deletion grace period of its own
// (kubectl delete --grace-period) and waits until it is gone.
func (e *env) deleteWithGrace(t *testing.T, ns, name string, grace int64) {
	t.Helper()
	if err := e.cs.CoreV1().Pods(ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
	e.waitGone(t, ns, name, time.Minute)
}

// 40: a 3 s sleep preStop within a 30 s grace period: the hook's span, then
// SIGTERM, a clean termination. A 1 s sleep postStart shows as its span,
// from the start to the kubelet's report of the container running.
func (e *env) sleepPreStop(t *testing.T) {
	t.Parallel()
	const ns = "s40-sleep-prestop"
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	app.Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}},
		PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}},
	}
	grace := int64(30)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Labels: map[string]string{"app": "sleeper"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{app}}})
	// Behind a Service: the endpoints controller withdraws the pod at its
	// deletion, during the hook, before the SIGTERM.
	e.serviceFor(t, ns, "sleeper", pod)
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		term := pk.one(names.SpanPodTermination)
		pre := pk.one(names.SpanContainerPreStop, ctrName("app"))
		stop := pk.one(names.SpanContainerStop, ctrName("app"))
		post := pk.one(names.SpanContainerPostStart, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		_, withdrawn, werr := serviceSteps(tr, "sleeper")
		if werr == nil && !withdrawn.Time.Before(stop.Start) {
			werr = fmt.Errorf("withdrawn at %s, not before the SIGTERM at %s (after a 3 s preStop)", withdrawn.Time, stop.Start)
		}
		if werr == nil && strings.Contains(term.Str(names.Verdict), "withdrew") {
			werr = fmt.Errorf("verdict %q tells a withdrawal that came before the SIGTERM", term.Str(names.Verdict))
		}
		left, err := floatTag(stop, names.GraceLeftSeconds)
		return firstErr(err, werr, childOf(tr, pre, term), childOf(tr, stop, term), inOrder(pre, stop),
			attr(pre, names.HookHandler, "sleep"), attr(pre, names.HookSleepSeconds, "3"),
			attr(post, names.HookHandler, "sleep"), attr(stop, names.Sigkill, "false"),
			attr(term, names.GracePeriodOverrun, "false"),
			func() error {
				if term.Error || pre.Error || stop.Error {
					return errors.New("a clean termination after a 3 s preStop has an error span")
				}
				if pre.Duration < 2800*time.Millisecond || pre.Duration > 5*time.Second {
					return fmt.Errorf("preStop (sleep 3) lasted %s", pre.Duration)
				}
				if left < 24 || left > 27.5 {
					return fmt.Errorf("grace left to the app %.1fs, want ~27 (30 - the 3 s hook)", left)
				}
				// The hook's end is the kubelet's status write as the
				// tracer saw it: at least the hook's second.
				if post.Duration < 900*time.Millisecond || post.Duration > 10*time.Second {
					return fmt.Errorf("postStart (sleep 1) lasted %s", post.Duration)
				}
				return nil
			}())
	})
	report(t, tr)
	pre, _ := only(tr, names.SpanContainerPreStop)
	post, _ := only(tr, names.SpanContainerPostStart)
	t.Logf("scenario 40: preStop sleep 3 lasted %s, postStart sleep 1 lasted %s", pre.Duration.Round(time.Millisecond),
		post.Duration.Round(time.Millisecond))
}

// 41: a 20 s sleep preStop deleted with a 5 s grace period (the API
// refuses a sleep longer than the pod's own grace period; a deletion's
// may be shorter), an app that ignores SIGTERM: the hook is cut at 5 s,
// the kubelet gives the app its 2 s minimum, then SIGKILL. Not the app's
// overrun: the termination names the hook.
func (e *env) sleepPreStopOverGrace(t *testing.T) {
	t.Parallel()
	const ns = "s41-prestop-over-grace"
	e.namespace(t, ns)
	app := container("app", sh(`trap '' TERM; while :; do sleep 1; done`)...)
	app.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 20}}}
	grace := int64(30)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "long-hook"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{app}}})
	time.Sleep(2 * time.Second)
	e.deleteWithGrace(t, ns, pod.Name, 5)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		term, pre, stop, err := preStopSpans(tr)
		if err != nil {
			return err
		}
		return firstErr(childOf(tr, pre, term), inOrder(pre, stop),
			attr(pre, names.HookHandler, "sleep"), attr(stop, names.Sigkill, "true"),
			attr(stop, names.GracePeriodOverrun, "false"), attr(stop, names.GraceUsedByPreStop, "true"),
			attr(term, names.GracePeriodOverrun, "false"), attr(term, names.GraceUsedByPreStop, "true"),
			func() error {
				if pre.Duration < 4500*time.Millisecond || pre.Duration > 7*time.Second {
					return fmt.Errorf("preStop (sleep 20, grace 5) lasted %s, want it cut at ~5 s", pre.Duration)
				}
				if stop.Duration < 1500*time.Millisecond || stop.Duration > 4*time.Second {
					return fmt.Errorf("SIGTERM→SIGKILL took %s, want the kubelet's 2 s minimum", stop.Duration)
				}
				msg := term.Str("otel.status_description")
				if strings.Contains(msg, "grace period overrun") || !strings.Contains(msg, "preStop hook used the grace period") {
					return fmt.Errorf("termination says %q, want the hook named, not an overrun", msg)
				}
				return nil
			}())
	})
	report(t, tr)
	stop, _ := only(tr, names.SpanContainerStop)
	t.Logf("scenario 41: SIGTERM→SIGKILL %s (%s)", stop.Duration.Round(time.Millisecond), stop.Str("otel.status_description"))
}

// 42: an httpGet preStop to busybox's httpd in the container: the hook's
// span with its handler, path and port, then SIGTERM.
func (e *env) httpGetPreStop(t *testing.T) {
	t.Parallel()
	const ns = "s42-httpget-prestop"
	e.namespace(t, ns)
	// On the host network: the kubelet dials the pod's IP, and the e2e's
	// CNI bridge has no address on the host (isGateway false), so a pod
	// IP's connection would leave the node instead of reaching the
	// container's httpd. A readiness probe on the same port proves the
	// kubelet reaches it. The hook names its host: without one the kubelet
	// looks the pod's IP up in the runtime's pod status at the hook's
	// start, and on a loaded node (CI, 2026-11-28) that status listed no
	// container yet: "failed to find networking container", the hook
	// failed at once and the scenario waited for a drain that never ran.
	const port = 18342
	app := container("app", sh(fmt.Sprintf(`mkdir -p /www && echo bye > /www/drain && httpd -p %d -h /www; `, port)+gracefulApp)...)
	app.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
		Host: "127.0.0.1", Path: "/drain", Port: intstr.FromInt32(port)}}}
	app.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(port)}}}
	grace := int64(30)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "drainer"},
		Spec: corev1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{app}}})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		term, pre, stop, err := preStopSpans(tr)
		if err != nil {
			return err
		}
		return firstErr(childOf(tr, pre, term), inOrder(pre, stop),
			attr(pre, names.HookHandler, "httpGet"), attr(pre, names.HookHTTPPath, "/drain"), attr(pre, names.HookHTTPPort, strconv.Itoa(port)),
			attr(stop, names.Sigkill, "false"), attr(term, names.GracePeriodOverrun, "false"),
			func() error {
				if pre.Duration > 5*time.Second {
					return fmt.Errorf("httpGet preStop lasted %s", pre.Duration)
				}
				return nil
			}())
	})
	report(t, tr)
	pre, _ := only(tr, names.SpanContainerPreStop)
	t.Logf("scenario 42: httpGet preStop lasted %s", pre.Duration.Round(time.Millisecond))
}

// 43: the kubelet restarted mid-termination, during a 10 s sleep preStop
// (grace 30): the restarted kubelet runs the hook again and begins a new
// grace period. The termination carries the rerun; the first run shows
// as interrupted, the second ends at SIGTERM; the app exits in time. Run
// after the lifecycle group: a kubelet restart disturbs every pod.
func (e *env) kubeletRestartMidTermination(t *testing.T) {
	const ns = "s43-kubelet-restart"
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	app.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}}}
	grace := int64(30)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rerun"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{app}}})
	time.Sleep(2 * time.Second)
	e.deletePod(t, ns, pod.Name)
	time.Sleep(3 * time.Second)
	restartAt := time.Now()
	if err := e.cluster.RestartKubelet(e.ctx); err != nil {
		t.Fatalf("restart the kubelet: %v", err)
	}
	t.Logf("scenario 43: kubelet restarted in %s", time.Since(restartAt).Round(time.Millisecond))
	e.waitGone(t, ns, pod.Name, 2*time.Minute)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		term, err := only(tr, names.SpanPodTermination)
		if err != nil {
			return err
		}
		var rerun *backends.SpanEvent
		for i := range term.Events {
			if term.Events[i].Name == names.EventPreStopRerun {
				rerun = &term.Events[i]
			}
		}
		if rerun == nil {
			return fmt.Errorf("no %s event on the termination", names.EventPreStopRerun)
		}
		pres := tr.Named(names.SpanContainerPreStop)
		if len(pres) != 2 {
			return fmt.Errorf("%d container.prestop spans, want the interrupted run and the rerun", len(pres))
		}
		first, second := pres[0], pres[1]
		if first.Start.After(second.Start) {
			first, second = second, first
		}
		stop, err := only(tr, names.SpanContainerStop)
		if err != nil {
			return err
		}
		return firstErr(childOf(tr, second, term), inOrder(first, second, stop), attr(stop, names.Sigkill, "false"),
			attr(term, names.GracePeriodOverrun, "false"),
			func() error {
				if !first.Error {
					return errors.New("the interrupted preStop run is not an error")
				}
				// The rerun began with the new kubelet: after the old
				// one was stopped (clocks of one host; 1 s of slack).
				if rerun.Time.Before(restartAt.Add(-time.Second)) {
					return fmt.Errorf("the rerun at %s, before the kubelet's restart at %s", rerun.Time, restartAt)
				}
				if term.Error {
					return fmt.Errorf("termination error: %s", term.Str("otel.status_description"))
				}
				return nil
			}())
	})
	report(t, tr)
}

// preStopSpans picks the termination and the app's container.prestop and
// container.stop spans, each exactly once.
func preStopSpans(tr *backends.Trace) (term, pre, stop *backends.Span, err error) {
	pk := &pick{tr: tr}
	term = pk.one(names.SpanPodTermination)
	pre = pk.one(names.SpanContainerPreStop, ctrName("app"))
	stop = pk.one(names.SpanContainerStop, ctrName("app"))
	return term, pre, stop, pk.err
}
