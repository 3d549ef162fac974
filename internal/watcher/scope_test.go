package watcher

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The fake clientset ignores field selectors; the harness applies them to
// events the way the API server does (registry/core/event: the involved
// object's fields, reason, type, source).
func eventFields(ev *corev1.Event) fields.Set {
	return fields.Set{
		"metadata.name":            ev.Name,
		"metadata.namespace":       ev.Namespace,
		"involvedObject.kind":      ev.InvolvedObject.Kind,
		"involvedObject.namespace": ev.InvolvedObject.Namespace,
		"involvedObject.name":      ev.InvolvedObject.Name,
		"involvedObject.uid":       string(ev.InvolvedObject.UID),
		"reason":                   ev.Reason,
		"type":                     ev.Type,
		"source":                   ev.Source.Component,
	}
}

func listEvents(cs *fake.Clientset, a k8stesting.ListAction) (bool, runtime.Object, error) {
	obj, err := cs.Tracker().List(a.GetResource(), corev1.SchemeGroupVersion.WithKind("Event"), a.GetNamespace())
	if err != nil {
		return true, nil, err
	}
	l := obj.(*corev1.EventList)
	sel := a.GetListRestrictions().Fields
	out := &corev1.EventList{ListMeta: l.ListMeta}
	for i := range l.Items {
		if sel == nil || sel.Matches(eventFields(&l.Items[i])) {
			out.Items = append(out.Items, l.Items[i])
		}
	}
	return true, out, nil
}

func filterEvents(wi watch.Interface, sel fields.Selector) watch.Interface {
	if sel == nil || sel.Empty() {
		return wi
	}
	return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
		ev, ok := e.Object.(*corev1.Event)
		return e, !ok || sel.Matches(eventFields(ev))
	})
}

// checkEventRequests checks that every events list and watch was scoped to
// one of the given pods: its namespace, involvedObject.uid=<uid>.
func checkEventRequests(t *testing.T, h *harness, pods map[types.UID]bool) {
	t.Helper()
	seen := map[types.UID]bool{}
	for _, a := range h.cs.Actions() {
		if a.GetResource().Resource != "events" || (a.GetVerb() != "list" && a.GetVerb() != "watch") {
			continue
		}
		var sel fields.Selector
		switch a := a.(type) {
		case k8stesting.ListAction:
			sel = a.GetListRestrictions().Fields
		case k8stesting.WatchAction:
			sel = a.GetWatchRestrictions().Fields
		}
		uid, ok := "", false
		if sel != nil {
			uid, ok = sel.RequiresExactMatch("involvedObject.uid")
		}
		if !ok || !pods[types.UID(uid)] || a.GetNamespace() != "shop" {
			t.Errorf("events %s in namespace %q with field selector %v: want one of this node's pods'", a.GetVerb(), a.GetNamespace(), sel)
			continue
		}
		seen[types.UID(uid)] = true
	}
	for uid := range pods {
		if !seen[uid] {
			t.Errorf("no event window on %s", uid)
		}
	}
}

type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(t0.UnixNano())
	return c
}
func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func (h *harness) waitStats(what string, ok func(Stats) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.w.wake()
		st := h.w.Stats()
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s: stats %+v", what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle gives the watcher's loops time to act, wakes its reconcile loop
// and sweeper, and gives them time again: what they would do now is done.
func (h *harness) settle() {
	time.Sleep(50 * time.Millisecond)
	h.w.wake()
	h.w.wakeSweeper()
	time.Sleep(50 * time.Millisecond)
}

// startedOnClock starts a watcher on a test clock and waits until the API
// is available and the pods are watched.
func startedOnClock(t *testing.T) (*testClock, *harness) {
	t.Helper()
	clock := newTestClock()
	h := newHarness(t, clock.now)
	h.start()
	h.waitFor("API available", isAPI(true, false))
	h.waitWatching("pods", 1)
	return clock, h
}

func withReady(p *corev1.Pod, ready bool) *corev1.Pod {
	p = p.DeepCopy()
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
		p.Status.Phase = corev1.PodRunning
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

// A pod's event window is open while it starts and closes quietTail after
// it is Ready (a Started written just after the status still comes live).
// The window reopens when the pod is no longer Ready (its initial list then
// brings what was reported meanwhile, not what was sent already), closes
// when the pod is gone, and reopens on a gone pod only when the model asks
// (Want: containers still run); then the pod is forgotten.
func TestEventWindowLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock, h := startedOnClock(t)
	ctx := context.Background()
	pods, events := h.cs.CoreV1().Pods("shop"), h.cs.CoreV1().Events("shop")

	web := testPod("web", node)
	if _, err := pods.Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitStats("a window on the starting pod", func(st Stats) bool { return st.EventWatches == 1 })
	h.waitWatching("events", 1)
	started := testEvent("web.started", web, "Started", 1)
	// The fake tracker's own resource versions for events (it numbers each
	// resource's writes from 2 but leaves objects as given): the watcher
	// resumes windows from the versions it was handed.
	started.ResourceVersion = "2"
	if _, err := events.Create(ctx, started, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("Started", isEvent(started.UID, 1))

	// Ready: the window stays for quietTail, and the kubelet's trailing
	// write, just after the status, comes live.
	if _, err := pods.Update(ctx, withReady(web, true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pod Ready", isPod(web.UID, func(p *fact.PodInfo) bool { return p.Phase == "Running" }))
	trailing := testEvent("web.started-sidecar", web, "Started", 1)
	trailing.ResourceVersion = "3"
	if _, err := events.Create(ctx, trailing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the trailing Started, within the quiet tail", isEvent(trailing.UID, 1))
	if st := h.w.Stats(); st.EventWatches != 1 {
		t.Errorf("window closed within the quiet tail: %+v", st)
	}
	clock.advance(quietTail + time.Second)
	h.waitStats("the window closed", func(st Stats) bool { return st.EventWatches == 0 && st.EventsCached == 0 })
	if st := h.w.Stats(); st.EventSweeps != 0 {
		t.Errorf("a pod seen starting was swept: %+v", st)
	}

	// Quiet: a probe failure is not received now...
	unhealthy := testEvent("web.unhealthy", web, "Unhealthy", 2)
	unhealthy.ResourceVersion = "4"
	if _, err := events.Create(ctx, unhealthy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := h.count(isEvent(unhealthy.UID, 0)); n != 0 {
		t.Fatalf("event received with no window open")
	}
	// ...but with the next window, when the container restarts. Later
	// than the resume horizon, the window lists (the resumed start is
	// proven on a real API server: test/scale TestEventWindowResume).
	clock.advance(resumeHorizon)
	if _, err := pods.Update(ctx, withReady(web, false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("Unhealthy, from the new window's list", isEvent(unhealthy.UID, 2))
	h.waitStats("the window reopened", func(st Stats) bool { return st.EventWatches == 1 && st.EventsCached == 3 })
	if n := h.count(isEvent(started.UID, 0)); n != 1 {
		t.Errorf("Started sent %d times, want once (same resource version)", n)
	}

	// Gone: the window closes; a Killing written after is not received...
	if err := pods.Delete(ctx, web.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pod deleted", isPod(web.UID, func(p *fact.PodInfo) bool { return p.Deleted }))
	h.waitStats("the window closed when the pod is gone", func(st Stats) bool { return st.EventWatches == 0 })
	killing := testEvent("web.killing", web, "Killing", 1)
	if _, err := events.Create(ctx, killing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := h.count(isEvent(killing.UID, 0)); n != 0 {
		t.Fatalf("Killing received for a gone pod no one asked about")
	}
	// ...unless the model asks: its containers outlive the object.
	h.w.Want(string(web.UID))
	h.waitFor("Killing, from the window Want opened on the gone pod", isEvent(killing.UID, 1))
	// That window started where the last one stopped, without a list; the
	// one before, past the resume horizon, listed.
	if st := h.w.Stats(); st.WindowsResumed != 1 || st.WindowLists != 2 || st.ResumesExpired != 0 {
		t.Errorf("windows: %d resumed, %d lists, %d resumes expired; want 1, 2 (the first window's and the one past the horizon), 0", st.WindowsResumed, st.WindowLists, st.ResumesExpired)
	}
	clock.advance(settle + time.Second)
	h.waitStats("the window closed after settle", func(st Stats) bool { return st.EventWatches == 0 })
	clock.advance(deletedTTL)
	waitForgotten(t, h)
	checkEventRequests(t, h, map[types.UID]bool{web.UID: true})
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

// waitForgotten waits until the watcher knows no pod any more.
func waitForgotten(t *testing.T, h *harness) {
	t.Helper()
	h.w.wake()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.w.mu.Lock()
		n := len(h.w.pods)
		h.w.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods still known after deletedTTL", n)
		}
		h.w.wake()
		time.Sleep(5 * time.Millisecond)
	}
}

// At most MaxEventWatches windows are open; a pod waiting for one gets it
// when a window has been held for maxHold.
func TestEventWindowCap(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := newTestClock()
	a, b, c := testPod("a", node), testPod("b", node), testPod("c", node)
	h := newHarnessWith(t, clock.now, func(cfg *Config) { cfg.MaxEventWatches = 2 }, a, b, c,
		testEvent("a.sched", a, "Scheduled", 1), testEvent("b.sched", b, "Scheduled", 1), testEvent("c.sched", c, "Scheduled", 1))
	h.start()
	h.waitFor("API available", isAPI(true, false))
	h.waitStats("two windows", func(st Stats) bool { return st.EventWatches == 2 })
	time.Sleep(50 * time.Millisecond)
	h.w.wake()
	if st := h.w.Stats(); st.EventWatches != 2 {
		t.Fatalf("Stats = %+v, want 2 windows", st)
	}
	if n := h.count(func(in fact.Input) bool { return in.Event != nil }); n != 2 {
		t.Errorf("%d events sent, want 2:\n%s", n, dump(h.inputs()))
	}
	clock.advance(maxHold + time.Second)
	for _, p := range []*corev1.Pod{a, b, c} {
		h.waitFor("each pod's Scheduled", isEvent(types.UID("ev-"+p.Name+".sched"), 1))
	}
	if st := h.w.Stats(); st.EventWatches > 2 {
		t.Errorf("Stats = %+v: more windows than the cap", st)
	}
	checkEventRequests(t, h, map[types.UID]bool{a.UID: true, b.UID: true, c.UID: true})
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

func withLiveness(p *corev1.Pod, h corev1.ProbeHandler) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: h}
	return p
}

func (h *harness) windowsOn() map[types.UID]bool {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	out := map[types.UID]bool{}
	for uid := range h.w.windows {
		out[uid] = true
	}
	return out
}

// A quiet pod holds no event watch, whatever its probes: a fleet of
// probed pods costs the API server one pod watch per node. The kubelet's
// restart of one of its containers opens a window at once when the model
// asks (Want: it saw the runtime's stop signal) and with the status's
// restart count otherwise; the window's initial list brings the Killing
// event the kubelet wrote before the stop.
func TestEventWindowQuietPodStirred(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := newTestClock()
	httpPod := withReady(withLiveness(testPod("http", node), corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}), true)
	tcpPod := withReady(withLiveness(testPod("tcp", node), corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}), true)
	h := newHarnessWith(t, clock.now, nil, httpPod, tcpPod, testEvent("http.started", httpPod, "Started", 1))
	h.start()
	h.waitFor("API available", isAPI(true, false))
	// First seen quiet: no window; each pod's history waits for a sweep
	// shortly before its oldest Events could expire (sweepTime).
	h.waitStats("both sweeps deferred", func(st Stats) bool { return st.SweepsDeferred == 2 })
	clock.advance(quietTail + time.Second)
	h.settle()
	if st := h.w.Stats(); st.EventWatches != 0 || st.EventSweeps != 0 {
		t.Fatalf("quiet probed pods: %+v, want no window and no sweep yet", st)
	}
	if n := h.count(isEvent("ev-http.started", 0)); n != 0 {
		t.Fatalf("the http pod's history came %d times before its sweep", n)
	}
	clock.advance(DefaultEventTTL - sweepLead(DefaultEventTTL))
	h.waitFor("the http pod's history, from its sweep", isEvent("ev-http.started", 1))
	h.waitStats("both pods swept", func(st Stats) bool { return st.EventSweeps == 2 && st.SweepsDeferred == 0 })
	if st := h.w.Stats(); st.EventWatches != 0 || st.EventSweeps != 2 {
		t.Fatalf("quiet probed pods: %+v, want no window and one sweep each", st)
	}

	ctx := context.Background()
	events := h.cs.CoreV1().Events("shop")
	killing := func(p *corev1.Pod) *corev1.Event {
		ev := testEvent(p.Name+".killing", p, "Killing", 1)
		ev.Message = "Container web failed liveness probe, will be restarted"
		if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return ev
	}

	// The model saw the kubelet stop the http pod's container.
	ev := killing(httpPod)
	h.w.Want(string(httpPod.UID))
	h.w.Want("not-a-pod-of-this-node")
	if got := h.waitFor("Killing, from the list of the window Want opened", isEvent(ev.UID, 1)).Event; got.Message != ev.Message {
		t.Errorf("event = %+v", got)
	}
	if on := h.windowsOn(); len(on) != 1 || !on[httpPod.UID] {
		t.Fatalf("windows on %v, want the http pod's alone", on)
	}

	// No model hint: the tcp pod's status shows the restart.
	ev = killing(tcpPod)
	restarted := tcpPod.DeepCopy()
	restarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", RestartCount: 1}}
	if _, err := h.cs.CoreV1().Pods("shop").Update(ctx, restarted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("Killing, from the list of the window the restart count opened", isEvent(ev.UID, 1))

	clock.advance(settle + time.Second)
	h.waitStats("both windows closed after settle", func(st Stats) bool { return st.EventWatches == 0 })
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

// A static pod's mirror: the kubelet records its Events against the static
// pod's own UID (the kubernetes.io/config.mirror annotation), not the
// mirror's. The window watches that UID, and the Events arrive.
func TestEventWindowStaticPod(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock, h := startedOnClock(t)
	ctx := context.Background()
	mirror := testPod("etcd", node)
	mirror.Annotations = map[string]string{MirrorAnnotation: "0f1e2d3c"}
	if _, err := h.cs.CoreV1().Pods("shop").Create(ctx, mirror, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitWatching("events", 1)
	static := mirror.DeepCopy()
	static.UID = "0f1e2d3c"
	ev := testEvent("etcd.started", static, "Started", 1)
	if _, err := h.cs.CoreV1().Events("shop").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := h.waitFor("the static pod's Event", isEvent(ev.UID, 1))
	if got.Event.PodUID != "0f1e2d3c" {
		t.Errorf("event for pod %q", got.Event.PodUID)
	}
	checkEventRequests(t, h, map[types.UID]bool{"0f1e2d3c": true})

	// Ready and settled: no window. The model names the static pod by its
	// own UID (the kubelet's cgroup paths): Want finds the mirror.
	if _, err := h.cs.CoreV1().Pods("shop").Update(ctx, withReady(mirror, true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("mirror Ready", isPod(mirror.UID, func(p *fact.PodInfo) bool { return p.Phase == "Running" }))
	clock.advance(settle + time.Second)
	h.waitStats("the window closed", func(st Stats) bool { return st.EventWatches == 0 })
	h.w.Want("0f1e2d3c")
	h.waitStats("the window Want opened", func(st Stats) bool { return st.EventWatches == 1 })
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

// A pod Ready long enough for its window to close, then evicted by the
// kubelet: the kubelet writes its Evicted event before the kill, while no
// window is open, and the pod's status then goes from Ready to Failed (as
// quiet as Ready was). The change of how the pod is quiet reopens the
// window, whose initial list brings the Evicted event with the status.
func TestEventWindowReopensWhenReadyPodFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock, h := startedOnClock(t)
	ctx := context.Background()
	pods, events := h.cs.CoreV1().Pods("shop"), h.cs.CoreV1().Events("shop")

	web := testPod("web", node)
	if _, err := pods.Create(ctx, withReady(web, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pod Ready", isPod(web.UID, nil))
	clock.advance(settle + time.Second)
	h.waitStats("the window closed", func(st Stats) bool { return st.EventWatches == 0 })

	evicted := testEvent("web.evicted", web, "Evicted", 1)
	evicted.Message = "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\"."
	if _, err := events.Create(ctx, evicted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := withReady(web, false)
	failed.Status.Phase, failed.Status.Reason = corev1.PodFailed, "Evicted"
	if _, err := pods.Update(ctx, failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pod Failed", isPod(web.UID, func(p *fact.PodInfo) bool { return p.Phase == "Failed" }))
	got := h.waitFor("Evicted, from the reopened window's list", isEvent(evicted.UID, 1)).Event
	if got.Reason != "Evicted" || got.Message != evicted.Message {
		t.Errorf("event = %+v", got)
	}
	// Failed is quiet: the window closes again after settle.
	clock.advance(settle + time.Second)
	h.waitStats("the window closed again", func(st Stats) bool { return st.EventWatches == 0 })
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

// A sweep that fails (a slow API server: the list times out) is retried
// after sweepRetry, then after twice that, and says nothing about the API
// server's availability: the pod watch is fine. A refused sweep (RBAC)
// does.
func TestSweepFailureBacksOff(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := newTestClock()
	// The tracer starts late enough in the pods' Event TTL for a sweep at
	// once (sweepTime).
	clock.advance(DefaultEventTTL - sweepLead(DefaultEventTTL) + time.Minute)
	q := withReady(testPod("q", node), true)
	h := newHarnessWith(t, clock.now, nil, q, testEvent("q.started", q, "Started", 1))
	h.failList.Store("events", apierrors.NewTimeoutError("the list took too long", 1))
	h.start()
	h.waitFor("API available", isAPI(true, false))
	h.waitStats("the first sweep", func(st Stats) bool { return st.EventSweeps == 1 })
	still := func(want uint64, what string) {
		t.Helper()
		h.settle()
		if st := h.w.Stats(); st.EventSweeps != want {
			t.Fatalf("%s: %d sweeps, want %d", what, st.EventSweeps, want)
		}
	}
	still(1, "before sweepRetry")
	clock.advance(sweepRetry + time.Second)
	h.waitStats("the second sweep", func(st Stats) bool { return st.EventSweeps == 2 })
	clock.advance(sweepRetry + time.Second)
	still(2, "the backoff doubled")
	h.failList.Delete("events")
	clock.advance(sweepRetry)
	h.waitFor("the history, from the third sweep", isEvent("ev-q.started", 1))
	if n := h.count(isAPI(false, false)); n != 0 {
		t.Errorf("%d API unavailable inputs from failed sweeps", n)
	}

	// Refused: the API status says so.
	p := withReady(testPod("p", node), true)
	h.failList.Store("events", apierrors.NewForbidden(corev1.Resource("events"), "", errors.New("RBAC")))
	if _, err := h.cs.CoreV1().Pods("shop").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("API forbidden after a refused sweep", isAPI(false, true))
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

// A Ready pod first seen quiet is swept only shortly before its oldest
// Events could expire (its creation + the TTL - sweepLead): the window its
// termination opens first lists them instead, and the sweep is not made.
// A finished pod and a static pod's mirror are swept at once.
func TestSweepDeferredUntilEventsCouldExpire(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := newTestClock()
	clock.advance(5 * time.Minute) // the tracer starts 5 minutes after the pods
	q := withReady(testPod("q", node), true)
	done := testPod("done", node)
	done.Status.Phase = corev1.PodSucceeded
	mirror := withReady(testPod("mirror", node), true)
	mirror.Annotations = map[string]string{MirrorAnnotation: "static-hash"}
	mirrorEv := testEvent("mirror.started", mirror, "Started", 1)
	mirrorEv.InvolvedObject.UID = "static-hash"
	h := newHarnessWith(t, clock.now, nil, q, done, mirror, testEvent("q.started", q, "Started", 1),
		testEvent("done.started", done, "Started", 1), mirrorEv)
	h.start()
	h.waitFor("API available", isAPI(true, false))
	h.waitFor("the finished pod's history, swept at once", isEvent("ev-done.started", 1))
	h.waitFor("the mirror pod's history, swept at once", isEvent("ev-mirror.started", 1))
	h.waitStats("two sweeps, one deferred", func(st Stats) bool { return st.EventSweeps == 2 && st.SweepsDeferred == 1 })
	if n := h.count(isEvent("ev-q.started", 0)); n != 0 {
		t.Fatalf("the Ready pod's history came %d times before its sweep or window", n)
	}

	// Its termination comes first: the window lists its history, the
	// sweep is dropped.
	term := q.DeepCopy()
	term.DeletionTimestamp = ptr(metav1.NewTime(clock.now()))
	if _, err := h.cs.CoreV1().Pods("shop").Update(context.Background(), term, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the Ready pod's history, from its termination's window", isEvent("ev-q.started", 1))
	h.waitStats("no sweep left", func(st Stats) bool { return st.SweepsDeferred == 0 && st.SweepsDue == 0 })
	clock.advance(DefaultEventTTL)
	h.settle()
	if st := h.w.Stats(); st.EventSweeps != 2 || st.WindowLists != 1 {
		t.Fatalf("stats %+v, want the 2 sweeps made at once and 1 window list", st)
	}
	if n := h.count(isEvent("ev-q.started", 0)); n != 1 {
		t.Fatalf("the Ready pod's history came %d times, want once", n)
	}
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

// A pod first seen quiet whose status records no change within the Events'
// TTL gets no sweep (what its Events told has expired); one whose container
// ended within it does. The unswept pod's Events still alive come with its
// next window: its deletion's.
func TestSweepOnlyWithinEventTTL(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := newTestClock()
	clock.advance(2 * time.Hour) // the tracer starts two hours after t0
	old := withReady(testPod("old", node), true)
	old.Status.Conditions[0].LastTransitionTime = at(60)
	recent := withReady(testPod("recent", node), true)
	recent.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", RestartCount: 1,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			StartedAt: at(60), FinishedAt: at(2*3600 - 600)}}}}
	h := newHarnessWith(t, clock.now, nil, old, recent,
		testEvent("old.unhealthy", old, "Unhealthy", 40), testEvent("recent.killing", recent, "Killing", 1))
	h.start()
	h.waitFor("API available", isAPI(true, false))
	h.waitFor("the recent pod's history, from its sweep", isEvent("ev-recent.killing", 1))
	h.waitStats("one sweep, one pod unswept", func(st Stats) bool { return st.EventSweeps == 1 && st.Unswept == 1 })
	clock.advance(quietTail + time.Second)
	h.settle()
	if st := h.w.Stats(); st.EventSweeps != 1 || st.Unswept != 1 || st.EventWatches != 0 {
		t.Fatalf("stats %+v, want one sweep, one pod unswept, no window", st)
	}
	if n := h.count(isEvent("ev-old.unhealthy", 0)); n != 0 {
		t.Fatalf("the old pod's event came %d times before any window", n)
	}

	// Its deletion opens a window, whose list brings the Event still alive.
	ctx := context.Background()
	deleting := old.DeepCopy()
	deleting.DeletionTimestamp = ptr(metav1.NewTime(clock.now()))
	if _, err := h.cs.CoreV1().Pods("shop").Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the old pod's Unhealthy, from its termination's window", isEvent("ev-old.unhealthy", 40))
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}

func TestLastChange(t *testing.T) {
	p := testPod("p", node)
	if got := LastChange(p); !got.Equal(tm(0)) {
		t.Errorf("created only: %v, want the creation", got)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, LastTransitionTime: at(30)}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(20)}}}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(25)}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(40)}}}}
	if got := LastChange(p); !got.Equal(tm(40)) {
		t.Errorf("last run's end: %v, want %v", got, tm(40))
	}
	p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(50)}}}}
	if got := LastChange(p); !got.Equal(tm(50)) {
		t.Errorf("ephemeral start: %v, want %v", got, tm(50))
	}
	p.DeletionTimestamp = ptr(at(70))
	if got := LastChange(p); !got.Equal(tm(70)) {
		t.Errorf("deletion: %v, want %v", got, tm(70))
	}
}

// A window's list that fails is counted (the API server counts it too; the
// windows' lists count only those that returned), as canceled only when
// its window's close ended it: a timeout is not. The reflector lists again,
// and the window starts once the list works.
func TestEventWindowFailedListsCounted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	_, h := startedOnClock(t)
	h.failList.Store("events", apierrors.NewTimeoutError("the list took too long", 1))
	web := testPod("web", node)
	if _, err := h.cs.CoreV1().Pods("shop").Create(context.Background(), web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitStats("a failed window list", func(st Stats) bool { return st.WindowListsFailed >= 1 })
	if st := h.w.Stats(); st.WindowListsCanceled != 0 || st.WindowLists != 0 {
		t.Errorf("a timed-out list: %d canceled, %d lists; want 0, 0", st.WindowListsCanceled, st.WindowLists)
	}
	h.failList.Delete("events")
	h.waitStats("the window's list, once it works", func(st Stats) bool { return st.WindowLists == 1 })
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}
