package correlate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

func (o *obs) SignalsThrottled(ns string, n uint64) {
	o.calls = append(o.calls, fmt.Sprintf("throttled %q %d", ns, n))
}

const quietUID = "1c7f1c4d-2e3f-4b6c-8d9e-8f7a6b5c4d3e"

// quietPod adds a second live pod, with one container, beside the sim's.
func (s *sim) quietPod() {
	s.in(fact.Input{Pod: &fact.PodInfo{UID: quietUID, Name: "quiet", Namespace: "batch", NodeName: "node-a",
		CreatedAt: s.now, Phase: "Running", Containers: []fact.ContainerSpec{{Name: "q"}}}})
	s.mkdir(8100, "/kubepods/besteffort/pod"+quietUID)
	s.mkdir(8101, "/kubepods/besteffort/pod"+quietUID+"/c0ffee99")
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
		Container: &cri.Container{ID: "c0ffee99", SandboxID: "sb2", Name: "q", PodUID: quietUID, CreatedAt: s.now}}})
}

// rootOf is the root span of the pod with this UID.
func (s *sim) rootOf(uid string) span.Span {
	s.t.Helper()
	for _, sp := range s.find(names.SpanPod) {
		if slices.ContainsFunc(sp.Resource, func(a span.Attr) bool { return a.Key == names.K8sPodUID && a.Value == uid }) {
			return sp
		}
	}
	s.t.Fatalf("no root span for pod %s\n%s", uid, render(s.spans))
	return span.Span{}
}

// throttleEpisodes are the counts of a root span's throttling events.
func throttleEpisodes(sp span.Span) []int64 {
	var eps []int64
	for _, e := range sp.Events {
		if e.Name != names.EventSignalsThrottled {
			continue
		}
		for _, a := range e.Attrs {
			if a.Key == names.SignalsThrottled {
				eps = append(eps, a.Value.(int64))
			}
		}
	}
	return eps
}

// Signal records a container's budget in the kernel refused are the
// flooding pod's: its root span counts them, by episode, and the quiet pod
// beside it says nothing of them. Ring-buffer losses stay every pod's.
func TestThrottledSignalsMarkOnlyTheirPod(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.quietPod()
	app := s.cg["app"]
	s.in(fact.Input{Losses: &fact.Losses{Throttled: []fact.CgroupLoss{
		{CgroupID: app, Kind: kernel.EventSignalGenerate.String(), Count: 1500},
		{CgroupID: app, Kind: kernel.EventSignalDeliver.String(), Count: 500},
	}}})
	s.at(2 * time.Second)
	s.in(fact.Input{Losses: &fact.Losses{Throttled: []fact.CgroupLoss{{CgroupID: app, Kind: kernel.EventSignalGenerate.String(), Count: 1000}}}})
	s.at(time.Minute)
	s.in(fact.Input{Losses: &fact.Losses{Lost: 3, Throttled: []fact.CgroupLoss{
		{CgroupID: app, Kind: kernel.EventSignalGenerate.String(), Count: 7},
		{CgroupID: 424242, Kind: kernel.EventSignalGenerate.String(), Count: 9}, // no pod's
	}}})
	s.c.Flush()

	flood, quiet := s.rootOf(podUID), s.rootOf(quietUID)
	if got := flood.Attr(names.SignalsThrottled); got != int64(3007) {
		t.Errorf("flooding pod: %s = %v, want 3007", names.SignalsThrottled, got)
	}
	if eps := fmt.Sprint(throttleEpisodes(flood)); eps != "[3000 7]" {
		t.Errorf("flooding pod: throttling episodes %s, want [3000 7]", eps)
	}
	if got := quiet.Attr(names.SignalsThrottled); got != nil {
		t.Errorf("quiet pod: %s = %v, want none", names.SignalsThrottled, got)
	}
	if eps := throttleEpisodes(quiet); len(eps) != 0 {
		t.Errorf("quiet pod: throttling events %v", eps)
	}
	for _, sp := range []span.Span{flood, quiet} {
		if sp.Attr(names.EventsLost) != int64(3) {
			t.Errorf("%s: ring-buffer losses %v, want 3 on every live pod", sp.Resource, sp.Attr(names.EventsLost))
		}
	}
	var calls []string
	for _, c := range s.o.calls {
		if len(c) > 9 && c[:9] == "throttled" {
			calls = append(calls, c)
		}
	}
	if got := fmt.Sprint(calls); got != `[throttled "shop" 2000 throttled "shop" 1000 throttled "" 9 throttled "shop" 7]` {
		t.Errorf("observer calls %s", got)
	}
}
