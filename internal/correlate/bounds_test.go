package correlate_test

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

// Caps from bounds.go, as the spans must show them.
const (
	wantMaxSignalEvents = 32 + 8 // the cap, plus the first of each kind and the folded-count event
	wantMaxRootEvents   = 256
)

// heapNow is the live heap after a collection.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// signalFlood sends n SIGUSR1 from outside to a running container's init.
func signalFlood(s *sim, app uint32, n int) {
	for i := 0; i < n; i++ {
		if i%1000 == 0 {
			s.at(time.Millisecond)
		}
		s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: 77, Comm: "pinger", CgroupID: 1},
			Signal: syscall.SIGUSR1, Code: kernel.SIUser, Result: kernel.SignalDelivered, Disposition: kernel.DispositionHandler,
			TargetTGID: app, TargetPID: app, TargetCgroupID: s.cg["app"], TargetNSInit: true})
	}
}

// A container that gets a flood of signals: its run span keeps the cap of
// signal events and says how many it folded; the stop and the cause, which
// come after the flood, are still right.
func TestSignalFloodIsFolded(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	const n = 20000
	signalFlood(s, app, n)
	s.at(time.Second)
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionIgnored)
	s.at(3 * time.Second)
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.tick(12 * time.Second) // past the wait for the kubelet's word on a stop with no termination (kubelet_kill.go)
	run := s.one(names.SpanContainerRun)
	if len(run.Events) > wantMaxSignalEvents {
		t.Errorf("run has %d events, want at most %d", len(run.Events), wantMaxSignalEvents)
	}
	folded, _ := run.Attr(names.SignalsFolded).(int64)
	kept := 0
	for _, e := range run.Events {
		if e.Name == "signal SIGUSR1" {
			kept++
		}
	}
	if int(folded)+kept != n {
		t.Errorf("SIGUSR1 kept %d + folded %d, want %d", kept, folded, n)
	}
	if run.Attr(names.ExitCause) != "killed_by_runtime" {
		t.Errorf("cause after the flood: %v", run.Attrs)
	}
	if stop := s.one(names.SpanContainerStop); stop.Attr(names.SignalName) != "SIGTERM" || stop.Attr(names.Sigkill) != true {
		t.Errorf("stop after the flood: %v", stop.Attrs)
	}
}

// neverReadyPod: a pod whose readiness probe fails every 10 s for days.
func neverReadyPod(s *sim, probes int) {
	s.info.InitContainers = nil
	s.sandboxUp()
	s.container("app", "c0ffee02", 0)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", State: fact.ContainerState{Running: &fact.Running{StartedAt: s.now}}}}
	s.pod()
	for i := 0; i < probes; i++ {
		s.at(10 * time.Second)
		pr := s.exec("app", 99, "cat", "/tmp/ready")
		s.at(5 * time.Millisecond)
		s.exit("app", pr, 1, 0)
		if i%6 == 0 {
			s.event("Unhealthy", "app", "Readiness probe failed: cat: can't open '/tmp/ready'")
			s.in(fact.Input{Losses: &fact.Losses{Lost: 1}})
		}
		if i%30 == 0 {
			s.tick(0)
		}
	}
}

// A never-Ready pod for a simulated day: spans and root events stay within
// their caps, loss reports close together are one episode.
func TestNeverReadyPodStaysBounded(t *testing.T) {
	s := newSim(t)
	withStartupTimeout(s, 10*time.Minute)
	neverReadyPod(s, 8640)
	s.c.Flush()
	if n := len(s.find("probe.readiness")); n > 2*32 {
		t.Errorf("%d readiness probe spans, want them capped", n)
	}
	root := s.one("pod")
	if len(root.Events) > wantMaxRootEvents {
		t.Errorf("root has %d events", len(root.Events))
	}
	losses := 0
	for _, e := range root.Events {
		if e.Name == names.EventsLost {
			losses++
		}
	}
	if losses > 1+wantMaxRootEvents/2 || losses == 0 {
		t.Errorf("%d loss events for loss reports a minute apart", losses)
	}
	if root.Attr(names.EventsFolded) == nil {
		t.Errorf("root events folded not counted: %v", root.Attrs)
	}
}

// Loss reports seconds apart are one episode on the root.
func TestLossReportsMergeIntoEpisodes(t *testing.T) {
	s := newSim(t)
	s.startup()
	for range 50 {
		s.at(time.Second)
		s.in(fact.Input{Losses: &fact.Losses{Lost: 2}})
	}
	s.at(time.Minute)
	s.in(fact.Input{Losses: &fact.Losses{Lost: 1}})
	s.c.Flush()
	var eps []int64
	for _, e := range s.one("pod").Events {
		if e.Name == names.EventsLost {
			for _, a := range e.Attrs {
				if a.Key == names.EventsLost {
					eps = append(eps, a.Value.(int64))
				}
			}
		}
	}
	if fmt.Sprint(eps) != "[100 1]" {
		t.Errorf("loss episodes %v, want [100 1]", eps)
	}
}

// An Event that comes before its pod waits for it; one for a pod long gone
// does not bring it back.
func TestEventsNeverMakeOrRevivePods(t *testing.T) {
	s := newSim(t)
	s.event("Scheduled", "", "Successfully assigned shop/web-7d9f to node-a")
	s.at(100 * time.Millisecond)
	s.startup()
	s.c.Flush()
	var scheduled bool
	for _, e := range s.one("pod").Events {
		scheduled = scheduled || e.Name == "k8s.Scheduled"
	}
	if !scheduled {
		t.Error("an Event before its pod was lost")
	}
	// Long after the pod's trace ended (past any retention), a late Event.
	n := len(s.spans)
	s.at(time.Hour)
	s.tick(time.Second)
	s.event("Killing", "app", "Stopping container app")
	s.tick(3 * time.Minute)
	s.c.Flush()
	if len(s.spans) != n {
		t.Errorf("a late Event made %d more spans: %v", len(s.spans)-n, s.spans[n:])
	}
}

// The largest span a pathological pod can produce stays far below a
// collector's 4 MiB message limit: every list on it is capped.
func TestSpanSizeBounded(t *testing.T) {
	s := newSim(t)
	withStartupTimeout(s, 10*time.Minute)
	neverReadyPod(s, 2000)
	for i := range 2000 {
		s.event("BackOff", "app", fmt.Sprintf("Back-off restarting failed container app in pod web-7d9f_shop(%s) %d %s", s.uid, i, strings.Repeat("x", 200)))
	}
	s.c.Flush()
	for _, sp := range s.spans {
		size := len(sp.Name) + len(sp.StatusMessage)
		for _, a := range sp.Attrs {
			size += len(a.Key) + len(fmt.Sprint(a.Value))
		}
		for _, e := range sp.Events {
			size += len(e.Name)
			for _, a := range e.Attrs {
				size += len(a.Key) + len(fmt.Sprint(a.Value))
			}
		}
		if size > 512<<10 {
			t.Errorf("%s: %d bytes of content", sp.Name, size)
		}
	}
}

// BenchmarkSignalFlood: 1M signals to one container; the heap must grow by
// less than 1 MiB (target), reported as heap-growth-KiB.
func BenchmarkSignalFlood(b *testing.B) {
	for b.Loop() {
		s := newSim(&testing.T{})
		app := s.startup()
		signalFlood(s, app, 1000)
		before := heapNow()
		signalFlood(s, app, 1_000_000)
		after := heapNow()
		b.ReportMetric(float64(int64(after)-int64(before))/1024, "heap-growth-KiB")
		runtime.KeepAlive(s)
	}
}

// BenchmarkNeverReadyPod30Days: a never-Ready pod with an exec readiness
// probe every 10 s for 30 simulated days (259,200 probes, an Unhealthy event
// and a loss report every minute); target < 256 KiB of heap for the pod.
func BenchmarkNeverReadyPod30Days(b *testing.B) {
	for b.Loop() {
		before := heapNow()
		s := newSim(&testing.T{})
		withStartupTimeout(s, 10*time.Minute)
		neverReadyPod(s, 30*24*360)
		s.spans = nil // what was exported is gone from the tracer
		after := heapNow()
		b.ReportMetric(float64(int64(after)-int64(before))/1024, "heap-KiB")
		runtime.KeepAlive(s)
	}
}

// BenchmarkPodEndAmongManyProcesses: a pod ending after 3,000 attempts
// while 100,000 processes live on the node; target: the Handle that ends it
// under 50 ms (reported as end-ms).
func BenchmarkPodEndAmongManyProcesses(b *testing.B) {
	for b.Loop() {
		s := newSim(&testing.T{})
		n := newNode(110, span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) }))
		for p := 0; p < 100_000; p++ {
			n.exec(p%110, uint32(1000+p%110))
		}
		s.c = n.c
		s.now = n.t
		s.pid = 1 << 20 // clear of the node's processes
		s.info.NodeName = "bench"
		app := s.startup()
		for a := uint32(1); a <= 3000; a++ {
			s.exit("app", app, 1, 0)
			s.cri(cri.EventContainerExited, "app", 1, "Error")
			s.at(time.Second)
			app = s.container("app", fmt.Sprintf("c0ffee%06d", a), a)
		}
		s.tick(3 * time.Second)
		s.info.Deleted = true
		start := time.Now()
		s.pod()
		s.exit("app", app, 0, syscall.SIGKILL)
		s.cri(cri.EventContainerExited, "app", 137, "Error")
		s.tick(3 * time.Second)
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "end-ms")
		if len(s.find("pod")) != 1 {
			b.Fatal("the pod did not end")
		}
	}
}
