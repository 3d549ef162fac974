package correlate_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/probe/event"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/probe"
)

// node builds a synthetic node: pods with one app container each, their
// cgroups known, as a tracer that just started would see them.
type node struct {
	c      *correlate.Correlator
	t      time.Time
	cgroup []uint64 // container cgroup id per pod
	next   uint32
	spans  int
}

func newNode(pods int, sinks ...span.Sink) *node {
	n := &node{t: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), next: 1000}
	n.c = correlate.New(correlate.Config{NodeName: "bench", Sink: span.SinkFunc(func(sp span.Span) {
		n.spans++
		for _, s := range sinks {
			s.Emit(sp)
		}
	})})
	n.c.Handle(fact.Input{Time: n.t, Start: &fact.Start{At: n.t}})
	for i := 0; i < pods; i++ {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		sb := fmt.Sprintf("%064x", 2*i+1)
		ctr := fmt.Sprintf("%064x", 2*i+2)
		podPath := "/kubepods/burstable/pod" + uid
		id := uint64(1_000_000 + 3*i)
		n.handle(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Time: n.t}, ID: id, Level: 3, Path: podPath})
		n.handle(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Time: n.t}, ID: id + 1, Level: 4, Path: podPath + "/" + sb})
		n.handle(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Time: n.t}, ID: id + 2, Level: 4, Path: podPath + "/" + ctr})
		n.c.Handle(fact.Input{Time: n.t, Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: n.t,
			Sandbox: &cri.Sandbox{ID: sb, PodUID: uid, PodName: "pod-" + strconv.Itoa(i), PodNamespace: "bench", CreatedAt: n.t}}})
		n.c.Handle(fact.Input{Time: n.t, Runtime: &cri.Event{Type: cri.EventContainerCreated, At: n.t,
			Container: &cri.Container{ID: ctr, SandboxID: sb, Name: "app", PodUID: uid, CreatedAt: n.t}}})
		n.cgroup = append(n.cgroup, id+2)
		// The container's init.
		n.exec(i, 1)
	}
	return n
}

func (n *node) handle(ev kernel.Event) {
	n.t = n.t.Add(time.Microsecond)
	ev.Hdr().Time = n.t
	n.c.Handle(fact.Input{Time: n.t, Kernel: ev})
}

func (n *node) exec(pod int, ppid uint32) uint32 {
	pid := n.next
	n.next++
	n.handle(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: n.cgroup[pod], TGID: pid, PID: pid, PPID: ppid, Comm: "app"},
		Filename: "/app", Args: []string{"/app", "--serve"}})
	return pid
}

// BenchmarkCorrelateKernelEvent measures a kernel event's whole way through
// user space: decode a raw ring buffer record, then the correlator (process
// trees, signals, container exits and their spans). One op is one event.
func BenchmarkCorrelateKernelEvent(b *testing.B) {
	n := newNode(110)
	// Raw records as the ring buffer delivers them, for a process churning
	// inside each pod: fork, exec, a signal, exit.
	recs := rawChurn(n)
	dec := probe.NewDecoder()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ev, err := dec.Decode(recs[i%len(recs)])
		if err != nil {
			b.Fatal(err)
		}
		n.c.Handle(fact.Input{Time: ev.Hdr().Time, Kernel: ev})
		i++
	}
}

func rawChurn(n *node) [][]byte {
	var out [][]byte
	for pod := range n.cgroup {
		child := uint32(500000 + pod)
		init := uint32(1000 + pod)
		out = append(out,
			event.EncodeForTest(&kernel.ForkEvent{Header: kernel.Header{Type: kernel.EventFork, Origin: kernel.OriginWatched, CgroupID: n.cgroup[pod], TGID: init, PID: init, Comm: "app"}, ChildTGID: child, ChildPID: child}),
			event.EncodeForTest(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: n.cgroup[pod], TGID: child, PID: child, PPID: init, Comm: "worker"}, Filename: "/bin/worker", Args: []string{"/bin/worker", "-n", "1"}}),
			event.EncodeForTest(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, CgroupID: n.cgroup[pod], TGID: init, PID: init, Comm: "app"}, Signal: syscall.SIGTERM, TargetTGID: child, TargetPID: child, TargetCgroupID: n.cgroup[pod]}),
			event.EncodeForTest(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginWatched, CgroupID: n.cgroup[pod], TGID: child, PID: child, PPID: init, Comm: "worker"}, Signal: syscall.SIGTERM, RawStatus: 15}),
		)
	}
	return out
}

// BenchmarkTrackedNodeMemory builds 110 pods with 10,000 live processes and
// reports the heap they take and the process's RSS.
func BenchmarkTrackedNodeMemory(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		n := newNode(110)
		for p := 0; p < 10000-110; p++ {
			pod := p % 110
			n.exec(pod, uint32(1000+pod))
		}
		st := n.c.Stats()
		if st.LivePods != 110 || st.LiveProcs < 10000 {
			b.Fatalf("tracking %d pods, %d processes", st.LivePods, st.LiveProcs)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(rssKiB())/1024, "rss-MiB")
		runtime.KeepAlive(n)
	}
}

func rssKiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	return 0
}
