package watcher

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pod watch's resource versions: one sample per change, the last
// resumeHorizon kept, the latest seen at or before a time found.
func TestRVHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	var h rvHistory
	h.note(t0, "100")
	h.note(t0.Add(time.Second), "100") // no change
	h.note(t0.Add(2*time.Second), "")  // not a number: ignored
	h.note(t0.Add(3*time.Second), "abc")
	h.note(t0.Add(10*time.Second), "150")
	if len(h.s) != 2 {
		t.Fatalf("samples %v, want 2", h.s)
	}
	for _, c := range []struct {
		at     time.Duration
		want   uint64
		wantOK bool
	}{
		{-time.Second, 0, false}, // before the first sample: nothing known
		{0, 100, true},
		{9 * time.Second, 100, true},
		{time.Minute, 150, true},
	} {
		got, ok := h.before(t0.Add(c.at))
		if ok != c.wantOK || got.rv != c.want {
			t.Errorf("before(t0%+v) = %v %v, want %d %v", c.at, got, ok, c.want, c.wantOK)
		}
	}
	// Past the horizon, old samples go (the newest stays).
	h.note(t0.Add(resumeHorizon+5*time.Second), "200")
	if len(h.s) != 2 || h.s[0].rv != 150 {
		t.Errorf("after the horizon: %v, want 150 and 200", h.s)
	}
}

// Where a pod's next window starts: after everything its window handed
// over, only if that window synced and never relisted.
func TestWindowStartNext(t *testing.T) {
	mk := func(from uint64, lists int32, handed ...string) *windowStart {
		ws := &windowStart{}
		ws.from.Store(from)
		ws.lists.Store(lists)
		for _, rv := range handed {
			ws.hand(rv)
		}
		return ws
	}
	for _, c := range []struct {
		name   string
		ws     *windowStart
		synced bool
		want   uint64
	}{
		{"listed, then Events handed over", mk(40, 1, "35", "52", "47"), true, 52},
		{"listed, nothing after", mk(40, 1, "12"), true, 40},
		{"not synced: its list may not all be handed over", mk(40, 1, "52"), false, 0},
		{"relisted", mk(40, 2, "52"), true, 0},
		{"never listed", mk(0, 0), true, 0},
	} {
		if got := c.ws.next(c.synced); got != c.want {
			t.Errorf("%s: next = %d, want %d", c.name, got, c.want)
		}
	}
}

// A new pod's first window resumes from the Events' own resource versions,
// not the pod watch's: the fake tracker numbers each resource's writes on
// its own, as a cluster that keeps Events in an etcd of their own does
// (--etcd-servers-overrides). Here the pods' versions run far ahead of the
// Events'; a window that watched from a pod's version would start in the
// Events' future and miss the new pod's Events.
func TestNewPodWindowResumesInTheEventsVersions(t *testing.T) {
	clock, h := startedOnClock(t)
	ctx := context.Background()
	pods, events := h.cs.CoreV1().Pods("shop"), h.cs.CoreV1().Events("shop")

	// A first pod's window lists: the Events' version of that moment is
	// seen (the tracker's 1: no Event yet).
	first := testPod("first", node)
	if _, err := pods.Create(ctx, first, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitStats("the first pod's window, listed", func(st Stats) bool { return st.EventWatches == 1 && st.WindowLists == 1 })

	// The pods' versions run ahead: another node's pod, updated 30 times.
	other := testPod("elsewhere", "node-b")
	if _, err := pods.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		other.Labels = map[string]string{"n": fmt.Sprint(i)}
		// As objects carry them from a real API server (the tracker
		// leaves objects as given).
		other.ResourceVersion = fmt.Sprint(1000 + i)
		if _, err := pods.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Reconciles see the pod watch far ahead (a tracer that took its
	// versions from there would resume from one of those).
	time.Sleep(200 * time.Millisecond)
	h.w.wake()
	time.Sleep(200 * time.Millisecond)
	// A pod created later than the version's time (plus the slack), then
	// its Event.
	clock.advance(resumeSlack + time.Second)
	late := testPod("late", node)
	late.CreationTimestamp = metav1.NewTime(clock.now())
	if _, err := pods.Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sched := testEvent("late.failedscheduling", late, "FailedScheduling", 1)
	if _, err := events.Create(ctx, sched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the late pod's Event, through its resumed window", isEvent(sched.UID, 1))
	if st := h.w.Stats(); st.WindowsResumed != 1 || st.WindowLists != 1 {
		t.Errorf("windows: %d resumed, %d lists; want the late pod's resumed, the first pod's listed", st.WindowsResumed, st.WindowLists)
	}
	if err := h.stop(); err == nil {
		t.Error("Run returned nil")
	}
}
