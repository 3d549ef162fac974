package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/watcher/clientset"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

const node = "node-a"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testPod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "shop", UID: types.UID("uid-" + name),
			CreationTimestamp: at(0),
		},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "web", Image: "web:1"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func testEvent(name string, pod *corev1.Pod, reason string, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace, UID: types.UID("ev-" + name)},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			FieldPath: "spec.containers{web}",
		},
		Type: "Normal", Reason: reason, Count: count,
		Source:         corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: at(1), LastTimestamp: at(int(count)),
	}
}

// harness runs a Watcher against a fake clientset and records its output.
type harness struct {
	t      *testing.T
	cs     *fake.Clientset
	w      *Watcher
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	got      []fact.Input
	watchers map[string][]watch.Interface // by resource, as handed to the informers

	// failList/failWatch, when set, make list/watch of that resource fail.
	failList, failWatch sync.Map // resource -> error
}

func newHarness(t *testing.T, clock func() time.Time, objs ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, clock, nil, objs...)
}

// newHarnessWith is newHarness with a Config modifier.
func newHarnessWith(t *testing.T, clock func() time.Time, mod func(*Config), objs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{t: t, cs: fake.NewClientset(objs...), done: make(chan error, 1), watchers: map[string][]watch.Interface{}}
	h.cs.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if err, ok := h.failList.Load(a.GetResource().Resource); ok {
			return true, nil, err.(error)
		}
		if a.GetResource().Resource == "events" {
			return listEvents(h.cs, a.(k8stesting.ListAction))
		}
		return false, nil, nil
	})
	h.cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		res := a.GetResource().Resource
		if err, ok := h.failWatch.Load(res); ok {
			return true, nil, err.(error)
		}
		wa := a.(k8stesting.WatchActionImpl)
		wi, err := h.cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), wa.ListOptions)
		if err == nil && res == "events" {
			wi = filterEvents(wi, wa.WatchRestrictions.Fields)
		}
		if err == nil {
			h.mu.Lock()
			h.watchers[res] = append(h.watchers[res], wi)
			h.mu.Unlock()
		}
		return true, wi, err
	})
	cfg := Config{Client: clientset.Wrap(h.cs), NodeName: node, Logger: quiet, Clock: clock}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	out := make(chan fact.Input)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for in := range out {
			h.mu.Lock()
			h.got = append(h.got, in)
			h.mu.Unlock()
		}
	}()
	go func() {
		err := h.w.Run(ctx, out)
		close(out)
		<-collected
		h.done <- err
	}()
	h.t.Cleanup(func() { _ = h.stop() })
}

// stop cancels Run and waits for it (and the collector) to return.
func (h *harness) stop() error {
	h.t.Helper()
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return after ctx was cancelled")
		return nil
	}
}

func (h *harness) inputs() []fact.Input {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]fact.Input(nil), h.got...)
}

// waitFor waits until an input matching pred has been emitted and returns
// the first one.
func (h *harness) waitFor(what string, pred func(fact.Input) bool) fact.Input {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, in := range h.inputs() {
			if pred(in) {
				return in
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; got:\n%s", what, dump(h.inputs()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) count(pred func(fact.Input) bool) int {
	n := 0
	for _, in := range h.inputs() {
		if pred(in) {
			n++
		}
	}
	return n
}

// waitWatching waits until the informers watch the resource (objects
// created before that are seen by the list, not the watch; the fake's
// watch does not replay from a resource version).
func (h *harness) waitWatching(res string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		got := len(h.watchers[res])
		h.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no watch on %s", res)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dump(ins []fact.Input) string {
	s := ""
	for _, in := range ins {
		switch {
		case in.Pod != nil:
			s += fmt.Sprintf("  pod %s uid=%s deleted=%v deletionTS=%v\n", in.Pod.Name, in.Pod.UID, in.Pod.Deleted, in.Pod.DeletionTimestamp)
		case in.Event != nil:
			s += fmt.Sprintf("  event %s %s pod=%s count=%d\n", in.Event.UID, in.Event.Reason, in.Event.PodUID, in.Event.Count)
		case in.API != nil:
			s += fmt.Sprintf("  api %+v\n", *in.API)
		default:
			s += fmt.Sprintf("  other %+v\n", in)
		}
	}
	return s
}

func isPod(uid types.UID, f func(*fact.PodInfo) bool) func(fact.Input) bool {
	return func(in fact.Input) bool {
		return in.Pod != nil && in.Pod.UID == string(uid) && (f == nil || f(in.Pod))
	}
}

func isEvent(uid types.UID, count int32) func(fact.Input) bool {
	return func(in fact.Input) bool {
		return in.Event != nil && in.Event.UID == string(uid) && (count == 0 || in.Event.Count == count)
	}
}

func aboutPod(uid types.UID) func(fact.Input) bool {
	return func(in fact.Input) bool {
		return (in.Pod != nil && in.Pod.UID == string(uid)) || (in.Event != nil && in.Event.PodUID == string(uid))
	}
}

func isAPI(available, forbidden bool) func(fact.Input) bool {
	return func(in fact.Input) bool {
		return in.API != nil && in.API.Available == available && in.API.Forbidden == forbidden
	}
}

func fixedClock() func() time.Time { return func() time.Time { return t0 } }

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{NodeName: node}); err == nil {
		t.Error("New without client: no error")
	}
	if _, err := New(Config{Client: clientset.Wrap(fake.NewClientset())}); err == nil {
		t.Error("New without node name: no error")
	}
}

func TestWatcherPodsAndEvents(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	ours := testPod("web-1", node)
	theirs := testPod("web-2", "node-b")
	ctx := context.Background()
	h := newHarness(t, fixedClock(), ours, theirs, testEvent("web-1.sched", ours, "Scheduled", 1))
	if h.w.Ready() {
		t.Fatal("Ready before Run")
	}
	h.start()

	// Initial list: our pod, its event; then the API is available.
	in := h.waitFor("our pod", isPod(ours.UID, nil))
	if in.Time != t0 || in.Pod.Name != "web-1" || in.Pod.NodeName != node || in.Pod.Deleted {
		t.Errorf("pod input = %+v", in)
	}
	h.waitFor("initial event", isEvent("ev-web-1.sched", 1))
	h.waitFor("API available", isAPI(true, false))
	if !h.w.Ready() {
		t.Error("not Ready after sync")
	}
	if st, ok := h.w.Status(); !ok || !st.Available || !st.Since.Equal(t0) {
		t.Errorf("Status() = %+v, %v", st, ok)
	}
	h.waitWatching("pods", 1)
	h.waitWatching("events", 1)

	watchedEvents(ctx, t, h, ours, theirs)
	watchedDeletion(ctx, t, h, ours)
	watchedNewPods(ctx, t, h)

	// Both informers deliver in order: everything about the other node's
	// pods was handled before the last inputs.
	for _, uid := range []types.UID{theirs.UID, "uid-web-4"} {
		if n := h.count(aboutPod(uid)); n != 0 {
			t.Errorf("%d inputs about %s (other node):\n%s", n, uid, dump(h.inputs()))
		}
	}
	if n := h.count(isAPI(false, false)) + h.count(isAPI(false, true)); n != 0 {
		t.Errorf("%d API unavailable inputs", n)
	}

	if err := h.stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// watchedEvents: ours emitted (and again on count bumps), theirs not.
func watchedEvents(ctx context.Context, t *testing.T, h *harness, ours, theirs *corev1.Pod) {
	t.Helper()
	events := h.cs.CoreV1().Events("shop")
	ev := testEvent("web-1.pulled", ours, "Pulled", 1)
	if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := h.waitFor("Pulled event", isEvent(ev.UID, 1)).Event
	if got.Container != "web" || got.Source != "kubelet" || got.PodName != "web-1" || got.Namespace != "shop" {
		t.Errorf("event = %+v", got)
	}
	if _, err := events.Create(ctx, testEvent("web-2.pulled", theirs, "Pulled", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev.Count = 2
	ev.LastTimestamp = at(5)
	if _, err := events.Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("Pulled event, count 2", isEvent(ev.UID, 2))
}

// watchedDeletion: deletion requested, then gone; a late event about the
// deleted pod still reaches the correlator when it asks (Want: its
// containers outlive the object).
func watchedDeletion(ctx context.Context, t *testing.T, h *harness, ours *corev1.Pod) {
	t.Helper()
	pods := h.cs.CoreV1().Pods("shop")
	events := h.cs.CoreV1().Events("shop")
	upd := ours.DeepCopy()
	upd.DeletionTimestamp = ptr(at(100))
	upd.DeletionGracePeriodSeconds = ptr[int64](30)
	if _, err := pods.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("pod with deletionTimestamp", isPod(ours.UID, func(p *fact.PodInfo) bool {
		return p.DeletionTimestamp != nil && p.DeletionTimestamp.Equal(tm(100)) && !p.Deleted
	}))
	if err := pods.Delete(ctx, ours.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	del := h.waitFor("pod deleted", isPod(ours.UID, func(p *fact.PodInfo) bool { return p.Deleted })).Pod
	if del.DeletionTimestamp == nil || del.Name != "web-1" {
		t.Errorf("deleted pod = %+v: want the last known state", del)
	}

	// Late event about the deleted pod still reaches the correlator.
	h.w.Want(string(ours.UID))
	if _, err := events.Create(ctx, testEvent("web-1.killing", ours, "Killing", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("Killing after delete", isEvent("ev-web-1.killing", 1))
}

// watchedNewPods: new pods, through the watch: ours emitted, theirs not.
func watchedNewPods(ctx context.Context, t *testing.T, h *harness) {
	t.Helper()
	pods := h.cs.CoreV1().Pods("shop")
	events := h.cs.CoreV1().Events("shop")
	if _, err := pods.Create(ctx, testPod("web-4", "node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	last := testPod("web-3", node)
	if _, err := pods.Create(ctx, last, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("new pod", isPod(last.UID, nil))
	if _, err := events.Create(ctx, testEvent("web-3.sched", last, "Scheduled", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("new pod's event", isEvent("ev-web-3.sched", 1))
}

// An event written before its pod is seen on this node (the scheduler's
// Scheduled, say) is not received then — no window is open on a pod not
// known here — but comes with the initial list of the pod's event window,
// after the pod. Events about other nodes' pods are never listed, watched
// or sent.
func TestWatcherEventBeforePod(t *testing.T) {
	h := newHarness(t, fixedClock())
	h.start()
	h.waitFor("API available", isAPI(true, false))
	h.waitWatching("pods", 1)
	ctx := context.Background()
	events := h.cs.CoreV1().Events("shop")

	early := testPod("early", node)
	if _, err := events.Create(ctx, testEvent("early.sched", early, "Scheduled", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := testPod("elsewhere", "node-b")
	if _, err := events.Create(ctx, testEvent("elsewhere.pulled", other, "Pulled", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sched := testEvent("elsewhere.sched", other, "Scheduled", 1)
	sched.Source = corev1.EventSource{}
	sched.ReportingController = "default-scheduler"
	if _, err := events.Create(ctx, sched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cs.CoreV1().Pods("shop").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := h.count(func(in fact.Input) bool { return in.Event != nil }); n != 0 {
		t.Errorf("%d events sent with no pod of this node known:\n%s", n, dump(h.inputs()))
	}

	if _, err := h.cs.CoreV1().Pods("shop").Create(ctx, early, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("event listed by the pod's window", isEvent("ev-early.sched", 1))
	ins := h.inputs()
	var podAt, evAt int
	for i, in := range ins {
		if isPod(early.UID, nil)(in) {
			podAt = i
		}
		if isEvent("ev-early.sched", 1)(in) {
			evAt = i
		}
	}
	if evAt < podAt {
		t.Errorf("event sent before its pod:\n%s", dump(ins))
	}
	if n := h.count(aboutPod(other.UID)); n != 0 {
		t.Errorf("%d inputs about another node's pod:\n%s", n, dump(ins))
	}
	if st := h.w.Stats(); st.EventsCached != 1 || st.EventWatches != 1 {
		t.Errorf("Stats = %+v, want 1 event cached in 1 window", st)
	}
	checkEventRequests(t, h, map[types.UID]bool{early.UID: true})
}

func TestWatcherForbidden(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	h := newHarness(t, fixedClock(), testPod("web-1", node))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
		errors.New(`User "system:serviceaccount:podchron:podchron" cannot list resource "pods" in API group "" at the cluster scope`))
	h.failList.Store("pods", error(forbidden))
	h.failWatch.Store("pods", error(forbidden))
	h.start()

	st := h.waitFor("API forbidden", isAPI(false, true)).API
	if st.Err == "" || !st.Since.Equal(t0) {
		t.Errorf("status = %+v", st)
	}
	// Run keeps going (the informer retries with backoff).
	select {
	case err := <-h.done:
		t.Fatalf("Run returned %v while forbidden", err)
	case <-time.After(1500 * time.Millisecond):
	}
	if h.w.Ready() {
		t.Error("Ready while forbidden")
	}
	if n := h.count(func(in fact.Input) bool { return in.Pod != nil }); n != 0 {
		t.Errorf("%d pod inputs while forbidden", n)
	}
	if n := h.count(func(in fact.Input) bool { return in.API != nil }); n != 1 {
		t.Errorf("%d API inputs, want 1 (repeated failures are not re-sent):\n%s", n, dump(h.inputs()))
	}
	if err := h.stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestWatcherUnreachableThenRecovers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	refused := fmt.Errorf("Get \"https://10.96.0.1:443/api/v1/pods\": dial tcp 10.96.0.1:443: connect: %w", syscall.ECONNREFUSED)
	ours := testPod("web-1", node)
	h := newHarness(t, fixedClock(), ours)
	h.failList.Store("pods", error(refused))
	h.start()

	st := h.waitFor("API unreachable at start", isAPI(false, false)).API
	if st.Err == "" {
		t.Errorf("status = %+v: no error", st)
	}
	if h.w.Ready() {
		t.Error("Ready before the first list")
	}

	// The API server comes (back): the pod is listed, the API available.
	h.failList.Delete("pods")
	h.waitFor("our pod", isPod(ours.UID, nil))
	h.waitFor("API available", isAPI(true, false))
	if !h.w.Ready() {
		t.Error("not Ready after sync")
	}
	h.waitWatching("pods", 1)

	// Outage after sync: the watch ends, the relist and rewatch are refused
	// (the reflector retries refused watches silently: podchron must still
	// notice).
	h.failList.Store("pods", error(refused))
	h.failWatch.Store("pods", error(refused))
	h.mu.Lock()
	for _, wi := range h.watchers["pods"] {
		wi.Stop()
	}
	h.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for h.count(isAPI(false, false)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no second unavailable:\n%s", dump(h.inputs()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.failList.Delete("pods")
	h.failWatch.Delete("pods")
	for h.count(isAPI(true, false)) < 2 {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("no recovery:\n%s", dump(h.inputs()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Transitions alternate.
	var seq []bool
	for _, in := range h.inputs() {
		if in.API != nil {
			seq = append(seq, in.API.Available)
		}
	}
	want := []bool{false, true, false, true}
	if fmt.Sprint(seq) != fmt.Sprint(want) {
		t.Errorf("API availability sequence = %v, want %v", seq, want)
	}
	if err := h.stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestRunTwice(t *testing.T) {
	h := newHarness(t, fixedClock())
	h.start()
	h.waitFor("API available", isAPI(true, false))
	if err := h.w.Run(context.Background(), make(chan fact.Input)); err == nil {
		t.Error("second Run: no error")
	}
}

func TestOnPodTombstone(t *testing.T) {
	w, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), NodeName: node, Logger: quiet, Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan fact.Input, 4)
	w.ctx, w.out = context.Background(), out
	pod := testPod("gone", node)
	pod.DeletionTimestamp = ptr(at(50))
	w.onPod(cache.DeletedFinalStateUnknown{Key: "shop/gone", Obj: pod}, true)
	w.onPod(cache.DeletedFinalStateUnknown{Key: "shop/x", Obj: testPod("x", "node-b")}, true)
	w.onPod(cache.DeletedFinalStateUnknown{Key: "shop/y", Obj: "not a pod"}, true)
	close(out)
	var got []fact.Input
	for in := range out {
		got = append(got, in)
	}
	if len(got) != 1 || got[0].Pod == nil || !got[0].Pod.Deleted || got[0].Pod.Name != "gone" ||
		got[0].Pod.DeletionTimestamp == nil || got[0].Time != t0 {
		t.Fatalf("got:\n%s", dump(got))
	}
	// Events about it are still admitted for a while.
	w.mu.Lock()
	_, known := w.pods[pod.UID]
	w.mu.Unlock()
	if !known {
		t.Error("deleted pod forgotten at once")
	}
}
