package pipeline

import (
	"log/slog"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/clock"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
)

var tlStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The runtime's times are the node's wall clock: after a step they are
// mapped back by it, on copies (the CRI watcher keeps what it sent).
func TestPlaceRuntimeAfterStep(t *testing.T) {
	src := clock.NewFake(time.Hour, tlStart)
	tl := clock.New(src)
	pl := NewPlacer(tl, SourceRuntime)
	src.Advance(time.Minute)
	src.StepWall(-time.Hour)
	var step time.Duration
	remeasure(tl, &step, slog.Default())
	if step != -time.Hour {
		t.Fatalf("step %v, want -1h", step)
	}
	wall := src.Real() // 10:01 on the stepped clock
	ct := &cri.Container{ID: "c", StartedAt: wall.Add(-30 * time.Second), FinishedAt: wall}
	in := fact.Input{Time: tl.Now(), Runtime: &cri.Event{Type: cri.EventContainerExited, At: wall, Observed: wall, Container: ct}}
	pl.Place(&in)
	want := tlStart.Add(time.Minute)
	if got := in.Runtime.Container.FinishedAt; !got.Equal(want) {
		t.Errorf("finished %v, want %v (the timeline)", got, want)
	}
	if got := in.Runtime.Container.FinishedAt.Sub(in.Runtime.Container.StartedAt); got != 30*time.Second {
		t.Errorf("run %v, want 30s", got)
	}
	if !in.Runtime.At.Equal(want) || !in.Runtime.Observed.Equal(want) {
		t.Errorf("at %v observed %v, want %v", in.Runtime.At, in.Runtime.Observed, want)
	}
	if !ct.FinishedAt.Equal(wall) {
		t.Errorf("the source's container was changed: %v", ct.FinishedAt)
	}
	pr := fact.Input{Progress: &fact.Progress{Source: fact.SourceRuntime, Until: wall}}
	pl.Place(&pr)
	if !pr.Progress.Until.Equal(want) {
		t.Errorf("runtime progress %v, want %v", pr.Progress.Until, want)
	}
}

// A node 2 s behind the API server: the first deletion seen measures the
// offset, and the API's times (creation, deletion) are mapped by it; the
// kubelet's (conditions, Events) by the node's step only.
func TestPlaceAPIOffset(t *testing.T) {
	src := clock.NewFake(time.Hour, tlStart)
	tl := clock.New(src)
	pl := NewPlacer(tl, SourceAPI)
	api := func() time.Time { return tl.Now().Add(2 * time.Second).Truncate(time.Second) }
	created := api()
	src.Advance(40 * time.Millisecond)
	pod := &fact.PodInfo{UID: "u", CreatedAt: created}
	in := fact.Input{Time: tl.Now(), Pod: pod}
	pl.Place(&in)
	if off := tl.API.Offset(); off >= 0 || off < -2*time.Second {
		t.Fatalf("offset %v after a creation stamped 2 s ahead, want in [-2s, 0)", off)
	}
	src.Advance(10*time.Second + 300*time.Millisecond)
	requested := api()
	grace := int64(30)
	deadline := requested.Add(30 * time.Second)
	recv := tl.Now().Add(5 * time.Millisecond)
	src.Advance(5 * time.Millisecond)
	del := &fact.PodInfo{UID: "u", CreatedAt: created, DeletionTimestamp: &deadline, DeletionGracePeriodSeconds: &grace,
		Conditions: []fact.Condition{{Type: "Ready", Status: "False", LastTransitionTime: recv}}}
	in = fact.Input{Time: recv, Pod: del}
	pl.Place(&in)
	if got := in.Pod.DeletionTimestamp.Add(-30 * time.Second); got.After(recv) || recv.Sub(got) > time.Second {
		t.Errorf("deletion at %v on the timeline, received %v: want at most 1 s before (the API's stamp %v is 2 s ahead)", got, recv, requested)
	}
	if !in.Pod.Conditions[0].LastTransitionTime.Equal(recv) {
		t.Errorf("the kubelet's condition time moved: %v, want %v", in.Pod.Conditions[0].LastTransitionTime, recv)
	}
	if *del.DeletionTimestamp != deadline {
		t.Errorf("the watcher's pod was changed")
	}
	for _, tc := range []struct {
		source string
		moved  bool
	}{{"kubelet", false}, {"default-scheduler", true}} {
		ev := fact.Input{Event: &fact.K8sEvent{Source: tc.source, FirstTime: recv, LastTime: recv}}
		pl.Place(&ev)
		if got := !ev.Event.LastTime.Equal(recv); got != tc.moved {
			t.Errorf("%s's Event: moved %v, want %v", tc.source, got, tc.moved)
		}
	}
}

// Without a step or an offset nothing is copied or changed; without a
// timeline nothing at all.
func TestPlaceIdentity(t *testing.T) {
	tl := clock.New(clock.NewFake(time.Hour, tlStart))
	ct := &cri.Container{ID: "c", StartedAt: tlStart}
	ev := &cri.Event{Container: ct}
	in := fact.Input{Runtime: ev}
	NewPlacer(tl, SourceRuntime).Place(&in)
	if in.Runtime != ev {
		t.Error("the runtime event was copied with no step")
	}
	var nilPl *Placer
	nilPl.Place(&in)
	NewPlacer(nil, SourceAPI).Place(&in)
}
