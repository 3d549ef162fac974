package correlate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// endpoint: what slice (of Service svc) says of the sim's pod now.
func (s *sim) endpoint(svc, slice string, listed, ready, terminating bool) {
	s.in(fact.Input{Endpoint: &fact.EndpointChange{PodUID: s.uid, Namespace: "shop", Service: svc, Slice: slice,
		Listed: listed, Ready: ready, Serving: ready || terminating, Terminating: terminating}})
}

func spanEvents(sp span.Span, name string) []span.SpanEvent {
	var out []span.SpanEvent
	for _, ev := range sp.Events {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// The endpoints controller lists the pod ready once it is Ready (a root
// event), then, at its deletion, marks it terminating: the withdrawal is on
// the termination, at the time it was seen, before the SIGTERM the preStop
// hook delays; the verdict has nothing to add.
func TestEndpointWithdrawnAtDeletion(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].PreStop = &fact.Handler{Kind: "sleep", SleepSeconds: 2}
	app := s.startup()
	s.endpoint("web", "web-v4", true, false, false) // listed not ready first: no withdrawal
	s.at(20 * time.Millisecond)
	s.endpoint("web", "web-v4", true, true, false)
	readyAt := s.now
	s.at(5 * time.Second)
	s.deleteWithGrace(30)
	s.at(8 * time.Millisecond)
	s.endpoint("web", "web-v4", true, false, true)
	withdrawnAt := s.now
	s.at(2 * time.Second)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.at(300 * time.Millisecond)
	s.endpoint("web", "web-v4", false, false, false) // removed as the pod goes
	s.gone()

	root := s.one(names.SpanPod)
	ready := spanEvents(root, names.EventEndpointReady)
	if len(ready) != 1 || !ready[0].Time.Equal(readyAt) || ready[0].Attr(names.K8sServiceName) != "web" {
		t.Fatalf("root's endpoint.ready events %+v, want one for web at %v", ready, readyAt)
	}
	term := s.one(names.SpanPodTermination)
	w := spanEvents(term, names.EventEndpointWithdrawn)
	if len(w) != 1 || !w[0].Time.Equal(withdrawnAt) {
		t.Fatalf("termination's withdrawals %+v, want one at %v", w, withdrawnAt)
	}
	for key, want := range map[string]any{names.K8sServiceName: "web", names.EndpointRemoved: false, names.EndpointTerminating: true, names.EndpointServing: true} {
		if got := w[0].Attr(key); got != want {
			t.Errorf("withdrawal %s=%v, want %v", key, got, want)
		}
	}
	if v := verdict(term); strings.Contains(v, "withdrew") {
		t.Errorf("verdict %q tells a withdrawal that came before the SIGTERM", v)
	}
	if slices.Contains(s.o.calls, "endpoint late shop") {
		t.Error("a withdrawal before the SIGTERM measured as late")
	}
}

// No preStop: the kubelet's SIGTERM came 2 s before the Service withdrew
// the pod (an endpoints controller behind): the verdict says so.
func TestVerdictServiceWithdrewAfterSIGTERM(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].PreStop = nil
	app := s.startup()
	s.endpoint("web", "web-v4", true, true, false)
	s.at(time.Second)
	s.deleteWithGrace(30)
	s.at(10 * time.Millisecond)
	s.signal("app", app, 15, "runc", 0, 0)
	s.at(2 * time.Second)
	s.endpoint("web", "web-v4", false, false, false)
	s.at(time.Second)
	s.exit("app", app, 0, 0)
	s.at(100 * time.Millisecond)
	s.gone()
	term := s.one(names.SpanPodTermination)
	if v := verdict(term); !strings.Contains(v, "; Service web withdrew it 2.0 s after its SIGTERM") {
		t.Errorf("verdict %q does not tell the late withdrawal", v)
	}
	if w := spanEvents(term, names.EventEndpointWithdrawn); len(w) != 1 || w[0].Attr(names.EndpointRemoved) != true {
		t.Errorf("withdrawals %+v, want one removal", w)
	}
	if root := verdict(s.one(names.SpanPod)); !strings.Contains(root, "Service web withdrew it") {
		t.Errorf("root verdict %q lacks the termination's", root)
	}
	if !slices.Contains(s.o.calls, "endpoint late shop") {
		t.Errorf("observer calls %v, want the late withdrawal measured", s.o.calls)
	}
}

// A Service with a slice per address family lists the pod twice; the
// controller moving it between slices, or dropping one family, is no
// withdrawal while another slice lists it ready. A pod not Ready before
// the deletion (readiness lost long before) has no withdrawal in its
// termination.
func TestEndpointSlicesOfOneService(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.endpoint("web", "web-v4", true, true, false)
	s.endpoint("web", "web-v6", true, true, false)
	s.at(time.Second)
	s.endpoint("web", "web-v4", false, false, false)
	s.endpoint("web", "web-v4b", true, true, false)
	s.endpoint("web", "web-v6", false, false, false)
	s.endpoint("api", "api-1", true, true, false)
	s.at(time.Second)
	s.endpoint("api", "api-1", true, false, false) // readiness lost, before the deletion
	s.at(10 * time.Second)
	s.deleteWithGrace(3)
	s.at(5 * time.Millisecond)
	s.endpoint("web", "web-v4b", true, false, true)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.gone()
	if r := spanEvents(s.one(names.SpanPod), names.EventEndpointReady); len(r) != 2 {
		t.Errorf("%d endpoint.ready events, want 2 (web once, api once)", len(r))
	}
	w := spanEvents(s.one(names.SpanPodTermination), names.EventEndpointWithdrawn)
	if len(w) != 1 || w[0].Attr(names.K8sServiceName) != "web" {
		t.Errorf("withdrawals %+v, want web's alone", w)
	}
}

// A tracer started mid-termination finds the endpoint already withdrawn:
// the withdrawal is told as listed (at or before its time), and no verdict
// is drawn from it. Changes about a pod never seen, about one whose trace
// ended, and another namespace's slice naming the pod are counted.
func TestEndpointFoundWithdrawnAndLate(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	// Another tenant's slice naming the pod: not the pod's.
	s.in(fact.Input{Endpoint: &fact.EndpointChange{PodUID: s.uid, Namespace: "evil", Service: "web", Slice: "web-v4", Listed: true, Ready: true}})
	s.deleteWithGrace(30)
	s.at(time.Second)
	s.in(fact.Input{Endpoint: &fact.EndpointChange{PodUID: s.uid, Namespace: "shop", Service: "web", Slice: "web-v4",
		Listed: true, Serving: true, Terminating: true, Initial: true}})
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.gone()
	s.at(time.Second)
	s.endpoint("web", "web-v4", false, false, false)
	s.in(fact.Input{Endpoint: &fact.EndpointChange{PodUID: "someone-else", Namespace: "shop", Service: "web", Slice: "web-v4", Listed: true, Ready: true}})
	s.tick(time.Second)

	term := s.one(names.SpanPodTermination)
	w := spanEvents(term, names.EventEndpointWithdrawn)
	if len(w) != 1 || w[0].Attr(names.EndpointListed) != true {
		t.Fatalf("withdrawals %+v, want one marked listed", w)
	}
	if strings.Contains(verdict(term), "withdrew") {
		t.Errorf("verdict %q draws on a listed withdrawal", verdict(term))
	}
	st := s.c.Stats()
	if st.Misses[string(names.MissEndpointAfterTraceEnd)] != 1 || st.Misses[string(names.MissEndpointUnknownPod)] != 1 ||
		st.Misses[string(names.MissEndpointNamespaceMismatch)] != 1 {
		t.Errorf("misses %v, want one endpoint_after_trace_end, one endpoint_unknown_pod, one endpoint_namespace_mismatch", st.Misses)
	}
	if r := spanEvents(s.one(names.SpanPod), names.EventEndpointReady); len(r) != 0 {
		t.Errorf("another namespace's slice made %d endpoint.ready events", len(r))
	}
}

// A pod selected by more Services than followed: the rest are counted on
// its root, not followed.
func TestEndpointServicesCapped(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	for i := range 20 {
		s.endpoint(fmt.Sprintf("svc-%02d", i), fmt.Sprintf("slice-%02d", i), true, true, false)
	}
	s.deleteWithGrace(3)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.gone()
	root := s.one(names.SpanPod)
	if r := spanEvents(root, names.EventEndpointReady); len(r) != 16 {
		t.Errorf("%d endpoint.ready events, want 16", len(r))
	}
	var capped int64
	for _, ev := range spanEvents(root, names.EventCorrelationMiss) {
		if ev.Attr(names.MissReasonKey) == string(names.MissEndpointServicesCapped) {
			capped, _ = ev.Attr(names.MissCount).(int64)
		}
	}
	if capped != 4 {
		t.Errorf("capped count on the root %d, want 4", capped)
	}
}

// A readiness episode: web withdraws the pod 20 ms after it lost Ready,
// api 3 s after (its controller behind: traffic went on to a pod failing
// its probe). Both withdrawals are on pod.not_ready and its message tells
// api's; web lists the pod ready again before the tracer sees Ready come
// back (two watches, no order between them): its withdrawal is still the
// episode's. At the deletion both withdraw it again: the termination has
// those two, not the episode's.
func TestEndpointWithdrawnInReadinessEpisode(t *testing.T) {
	s := newSim(t)
	s.info.Containers[0].PreStop = &fact.Handler{Kind: "sleep", SleepSeconds: 1}
	app := s.startup()
	s.endpoint("web", "web-v4", true, true, false)
	s.endpoint("api", "api-1", true, true, false)
	s.at(time.Minute)
	lost := s.now
	s.setReady(false)
	s.at(20 * time.Millisecond)
	s.endpoint("web", "web-v4", true, false, false)
	webOut := s.now
	s.at(3 * time.Second)
	s.endpoint("api", "api-1", true, false, false)
	apiOut := s.now
	s.at(5 * time.Second)
	s.endpoint("web", "web-v4", true, true, false)
	s.at(10 * time.Millisecond)
	s.setReady(true)
	s.at(15 * time.Millisecond)
	s.endpoint("api", "api-1", true, true, false)
	s.tick(2 * time.Second)

	nr := s.one(names.SpanPodNotReady)
	w := spanEvents(nr, names.EventEndpointWithdrawn)
	if len(w) != 2 || w[0].Attr(names.K8sServiceName) != "api" || !w[0].Time.Equal(apiOut) ||
		w[1].Attr(names.K8sServiceName) != "web" || !w[1].Time.Equal(webOut) {
		t.Fatalf("episode's withdrawals %+v, want api at %v and web at %v", w, apiOut, webOut)
	}
	if w[1].Attr(names.EndpointRemoved) != false || w[1].Attr(names.EndpointTerminating) != false {
		t.Errorf("web's withdrawal %+v, want listed not ready, not terminating", w[1].Attrs)
	}
	if want := "; Service api withdrew it 3.0 s after it lost Ready"; !strings.HasSuffix(nr.StatusMessage, want) {
		t.Errorf("episode's message %q, want it to end %q", nr.StatusMessage, want)
	}
	if !nr.Start.Equal(lost) {
		t.Errorf("episode from %v, want %v", nr.Start, lost)
	}
	if n := s.o.count("endpoint after not ready shop"); n != 1 {
		t.Errorf("%d late withdrawals after a lost Ready measured, want 1 (calls %q)", n, s.o.calls)
	}

	s.at(time.Minute)
	s.deleteWithGrace(30)
	s.at(5 * time.Millisecond)
	s.endpoint("web", "web-v4", true, false, true)
	s.endpoint("api", "api-1", true, false, true)
	s.at(time.Second)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.gone()
	term := s.one(names.SpanPodTermination)
	tw := spanEvents(term, names.EventEndpointWithdrawn)
	if len(tw) != 2 || tw[0].Time.Before(term.Start) || tw[1].Time.Before(term.Start) || tw[0].Attr(names.EndpointTerminating) != true {
		t.Errorf("termination's withdrawals %+v, want the deletion's two (from %v)", tw, term.Start)
	}
	if r := spanEvents(s.one(names.SpanPod), names.EventEndpointReady); len(r) != 2 {
		t.Errorf("%d endpoint.ready events on the root, want each Service's first", len(r))
	}
}

// Readiness lost until the deletion: the Service's withdrawal is the
// episode's (the pod was out of it before its termination began), and the
// termination has none; a Service that followed within 20 ms has no words.
func TestEndpointWithdrawnBeforeTermination(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.endpoint("web", "web-v4", true, true, false)
	s.at(time.Minute)
	s.setReady(false)
	s.at(20 * time.Millisecond)
	s.endpoint("web", "web-v4", true, false, false)
	s.at(30 * time.Second)
	s.deleteWithGrace(30)
	s.at(5 * time.Millisecond)
	s.endpoint("web", "web-v4", true, false, true)
	s.at(time.Second)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.gone()
	nr := s.one(names.SpanPodNotReady)
	if w := spanEvents(nr, names.EventEndpointWithdrawn); len(w) != 1 {
		t.Errorf("episode's withdrawals %+v, want web's", w)
	}
	if s.o.count("endpoint after not ready shop") != 0 {
		t.Errorf("a withdrawal 20 ms after the loss measured as late (calls %q)", s.o.calls)
	}
	if strings.Contains(nr.StatusMessage, "withdrew") {
		t.Errorf("episode's message %q tells a withdrawal 20 ms after the loss", nr.StatusMessage)
	}
	if w := spanEvents(s.one(names.SpanPodTermination), names.EventEndpointWithdrawn); len(w) != 0 {
		t.Errorf("termination's withdrawals %+v, want none: the pod was out before", w)
	}
}

// A tracer restarted during a readiness episode resumes it and finds the
// Service's slice listing the pod not ready: the episode, when Ready comes
// back, has the withdrawal as listed (at or before its time), and no words
// are drawn from it.
func TestEndpointFoundWithdrawnInResumedEpisode(t *testing.T) {
	s, _ := oldPod(t, 0)
	s.setCond("Ready", "False", s.now.Add(-10*time.Minute))
	s.pod()
	s.at(time.Second)
	s.in(fact.Input{Endpoint: &fact.EndpointChange{PodUID: s.uid, Namespace: "shop", Service: "web", Slice: "web-v4",
		Listed: true, Initial: true}})
	found := s.now
	s.at(30 * time.Second)
	s.setCond("Ready", "True", s.now)
	s.pod()
	s.tick(2 * time.Second)
	nr := s.one(names.SpanPodNotReady)
	w := spanEvents(nr, names.EventEndpointWithdrawn)
	if len(w) != 1 || w[0].Attr(names.EndpointListed) != true || !w[0].Time.Equal(found) {
		t.Fatalf("resumed episode's withdrawals %+v, want one listed at %v", w, found)
	}
	if strings.Contains(nr.StatusMessage, "withdrew") {
		t.Errorf("message %q draws on a listed withdrawal", nr.StatusMessage)
	}
}

// The API keeps the Ready condition's time in whole seconds: Ready lost at
// .900 reads .000. A Service that withdrew the pod 300 ms after the loss
// the tracer saw is not 1.2 s late.
func TestEndpointEpisodeDelayFromTheSighting(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.endpoint("web", "web-v4", true, true, false)
	s.at(time.Minute)
	s.now = s.now.Truncate(time.Second).Add(900 * time.Millisecond)
	for i, cd := range s.info.Conditions {
		if cd.Type == "Ready" || cd.Type == "ContainersReady" {
			s.info.Conditions[i].Status, s.info.Conditions[i].LastTransitionTime = "False", s.now.Truncate(time.Second)
		}
	}
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", State: fact.ContainerState{Running: &fact.Running{StartedAt: s.info.CreatedAt}}}}
	s.pod()
	s.at(300 * time.Millisecond)
	s.endpoint("web", "web-v4", true, false, false)
	s.at(10 * time.Second)
	s.setReady(true)
	s.tick(2 * time.Second)
	nr := s.one(names.SpanPodNotReady)
	if len(spanEvents(nr, names.EventEndpointWithdrawn)) != 1 {
		t.Fatalf("episode's events %+v, want web's withdrawal", nr.Events)
	}
	if strings.Contains(nr.StatusMessage, "withdrew") {
		t.Errorf("message %q: a Service 300 ms behind the loss read as late from the API's whole second", nr.StatusMessage)
	}
}

// Past the cap on pod.not_ready spans, an episode is an event on the root:
// it keeps its length and the words a late withdrawal gives the span's
// message.
func TestLateWithdrawalPastTheEpisodeCap(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.endpoint("api", "api-1", true, true, false)
	episode := func(withdrawAfter time.Duration) {
		s.at(time.Minute)
		s.setReady(false)
		if withdrawAfter > 0 {
			s.at(withdrawAfter)
			s.endpoint("api", "api-1", true, false, false)
		}
		s.at(5 * time.Second)
		s.setReady(true)
		if withdrawAfter > 0 {
			s.at(10 * time.Millisecond)
			s.endpoint("api", "api-1", true, true, false)
		}
		s.tick(2 * time.Second)
	}
	const spans = 32 // maxNotReadySpans
	for range spans {
		episode(0)
	}
	episode(3 * time.Second)
	s.c.Flush()

	if n := len(s.find(names.SpanPodNotReady)); n != spans {
		t.Fatalf("%d pod.not_ready spans, want the cap's %d", n, spans)
	}
	var lost []span.SpanEvent
	for _, e := range s.one(names.SpanPod).Events {
		if e.Name == names.EventReadinessLost {
			lost = append(lost, e)
		}
	}
	if len(lost) != 1 {
		t.Fatalf("%d readiness-lost events on the root past the cap, want 1", len(lost))
	}
	if got, want := lost[0].Attr(names.ReadinessLateWithdrawal), "Service api withdrew it 3.0 s after it lost Ready"; got != want {
		t.Errorf("late withdrawal on the root's event %v, want %q (attrs %v)", got, want, lost[0].Attrs)
	}
	if got := lost[0].Attr(names.NotReadySeconds); got != 5.0+3.0 {
		t.Errorf("episode's length on the root's event %v, want 8 s", got)
	}
}
