package correlate_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/correlate"
	criclient "github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/record"
	"github.com/podchron/podchron/internal/span"
)

// A tracer stopped at any instant (graceful Shutdown) and restarted must
// never emit a span ID twice with different content, and together the two
// instances must give the trees of the uninterrupted run wherever the facts
// the second instance can know allow it. The second instance knows what
// the daemon's start-up knows (restartSeed): the processes alive and their
// cgroups (pipeline.Seed's scan), the runtime's sandboxes and containers
// (the CRI watcher's first poll: internal/cri.Diff from nothing, phase
// initial) and the API server's pods and their Events (the informers'
// lists); then the facts that follow.

// restartStreams are every recorded stream: the runtime tests' (one pod
// each) and each namespace's stream cut out of the e2e's node recordings
// (nodeRecordings).
func restartStreams(t *testing.T) []recordedStream {
	t.Helper()
	var out []recordedStream
	for _, glob := range []string{"testdata/*.jsonl", "testdata/runtimes/*.jsonl", "testdata/progress/*.jsonl"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			out = append(out, recordedStream{name: strings.TrimPrefix(strings.TrimSuffix(f, ".jsonl"), "testdata/"), inputs: load(t, f)})
		}
	}
	for _, n := range nodeRecordings(t) {
		split := record.SplitByNamespace(n.inputs, e2eSplitTail)
		for _, ns := range slices.Sorted(maps.Keys(split)) {
			out = append(out, recordedStream{name: n.name + "/" + ns, inputs: split[ns]})
		}
	}
	// Single scenarios' streams kept from a node recording whose whole
	// stream was lost (2026-11-27's first run: a namespace's file overwrote
	// it): the cuts that needed the model's unnamed-session and
	// unnamed-container rules.
	streams, err := filepath.Glob("testdata/e2e/streams/*.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range streams {
		out = append(out, recordedStream{name: strings.TrimSuffix(strings.TrimPrefix(f, "testdata/"), ".jsonl.gz"), inputs: loadGzip(t, f)})
	}
	if len(out) == 0 {
		t.Fatal("no recorded streams in testdata")
	}
	return out
}

// recordedStream is a recorded input stream and its name.
type recordedStream struct {
	name   string
	inputs []fact.Input
}

// restartSeed is what a tracer started at `at` takes in before the facts
// that follow, derived from the facts before the stop (seen): a Start, the
// scan's cgroups and processes, the runtime's first poll, the API watch's
// server's lists and then its state.
func restartSeed(seen []fact.Input, at time.Time) []fact.Input {
	k := scanAt(seen)
	start := k.start
	start.At = at
	out := []fact.Input{{Time: at, Start: &start}}
	for _, id := range k.cgroupOrder {
		if p, ok := k.cgroups[id]; ok {
			out = append(out, fact.Input{Time: at, Cgroup: &fact.CgroupSeen{ID: id, Path: p}})
			delete(k.cgroups, id) // once
		}
	}
	pids := make([]uint32, 0, len(k.procs))
	for pid := range k.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		out = append(out, fact.Input{Time: at, Proc: k.procs[pid]})
	}
	for _, ev := range criclient.Diff(nil, runtimeAt(seen, at), cri.PhaseInitial) {
		out = append(out, fact.Input{Time: at, Runtime: &ev})
	}
	if slices.Contains(start.Progress, fact.SourceRuntime) {
		// The runtime's source reports its first poll complete once its
		// changes are handed over (pipeline.RuntimeSource).
		out = append(out, fact.Input{Time: at, Progress: &fact.Progress{Source: fact.SourceRuntime, Until: at}})
	}
	// The watcher sends the informers' initial lists first, then the
	// API's availability once they have synced (watcher.Run).
	out = append(out, apiAt(seen, at)...)
	if st := apiStatusAt(seen); st != nil {
		out = append(out, fact.Input{Time: at, API: st})
	}
	return out
}

// apiStatusAt is the API watch's state the watcher reports once its
// informers have synced (nil: no API server in the stream).
func apiStatusAt(seen []fact.Input) *fact.APIStatus {
	var st *fact.APIStatus
	for _, x := range seen {
		if x.API != nil {
			st = x.API
		}
	}
	return st
}

// kernelScan is what pipeline.Seed finds: the cgroups that exist and the
// processes alive in them.
type kernelScan struct {
	start       fact.Start
	cgroups     map[uint64]string
	cgroupOrder []uint64
	procs       map[uint32]*fact.ProcSeen
}

func scanAt(seen []fact.Input) kernelScan {
	k := kernelScan{cgroups: map[uint64]string{}, procs: map[uint32]*fact.ProcSeen{}}
	addCgroup := func(id uint64, path string) {
		k.cgroups[id] = path
		k.cgroupOrder = append(k.cgroupOrder, id)
	}
	for _, x := range seen {
		switch {
		case x.Start != nil:
			k.start = *x.Start
		case x.Cgroup != nil:
			addCgroup(x.Cgroup.ID, x.Cgroup.Path)
		case x.Proc != nil:
			p := *x.Proc
			k.procs[p.PID] = &p
		}
		switch e := x.Kernel.(type) {
		case *kernel.CgroupEvent:
			if e.Type == kernel.EventCgroupMkdir {
				addCgroup(e.ID, e.Path)
			} else {
				delete(k.cgroups, e.ID)
			}
		case *kernel.ExecEvent:
			k.exec(e)
		case *kernel.ForkEvent:
			k.fork(e)
		case *kernel.ExitEvent:
			delete(k.procs, e.TGID)
		}
	}
	// The scan reads cgroup.procs of the watched cgroups only.
	for pid, p := range k.procs {
		if _, ok := k.cgroups[p.CgroupID]; !ok {
			delete(k.procs, pid)
		}
	}
	return k
}

// exec: the process's command line changes; it started when it was forked
// (when that was seen), as /proc/<pid>/stat says.
func (k *kernelScan) exec(e *kernel.ExecEvent) {
	p := k.procs[e.TGID]
	if p == nil {
		p = &fact.ProcSeen{PID: e.TGID, PPID: e.PPID, Started: e.Time}
		k.procs[e.TGID] = p
	}
	p.CgroupID, p.Comm, p.Args = e.CgroupID, e.Comm, slices.Clone(e.Args)
}

// fork: a new process with its parent's command line.
func (k *kernelScan) fork(e *kernel.ForkEvent) {
	if e.ChildTGID == e.TGID {
		return // a thread
	}
	p := &fact.ProcSeen{PID: e.ChildTGID, PPID: e.TGID, CgroupID: e.CgroupID, Comm: e.Comm, Started: e.Time}
	if parent := k.procs[e.TGID]; parent != nil {
		p.Args = slices.Clone(parent.Args)
	}
	k.procs[e.ChildTGID] = p
}

// runtimeAt is the runtime's view at `at`: the latest state of every
// sandbox and container not removed.
func runtimeAt(seen []fact.Input, at time.Time) *criclient.Snapshot {
	snap := &criclient.Snapshot{Time: at, Sandboxes: map[string]cri.Sandbox{}, Containers: map[string]cri.Container{}}
	removed := map[string]bool{}
	for _, x := range seen {
		ev := x.Runtime
		if ev == nil {
			continue
		}
		switch ev.Type {
		case cri.EventSandboxRemoved:
			removed[ev.Sandbox.ID] = true
			delete(snap.Sandboxes, ev.Sandbox.ID)
		case cri.EventContainerRemoved:
			removed[ev.Container.ID] = true
			delete(snap.Containers, ev.Container.ID)
		case cri.EventRuntimeUnavailable, cri.EventRuntimeAvailable:
		default:
			if ev.Sandbox != nil && !removed[ev.Sandbox.ID] {
				snap.Sandboxes[ev.Sandbox.ID] = *ev.Sandbox
			}
			if ev.Container != nil {
				snap.Containers[ev.Container.ID] = *ev.Container
			}
		}
	}
	return snap
}

// apiAt is what the API server's lists give at `at`: the latest view of
// every pod not deleted, then the Events about them (an event window lists
// them when it opens).
func apiAt(seen []fact.Input, at time.Time) []fact.Input {
	pods := map[string]*fact.PodInfo{}
	var podOrder []string
	events := map[string]*fact.K8sEvent{}
	var eventOrder []string
	for _, x := range seen {
		switch {
		case x.Pod != nil && x.Pod.Deleted:
			delete(pods, x.Pod.UID)
		case x.Pod != nil:
			if _, ok := pods[x.Pod.UID]; !ok {
				podOrder = append(podOrder, x.Pod.UID)
			}
			pods[x.Pod.UID] = x.Pod
		case x.Event != nil:
			if _, ok := events[x.Event.UID]; !ok {
				eventOrder = append(eventOrder, x.Event.UID)
			}
			events[x.Event.UID] = x.Event
		}
	}
	var out []fact.Input
	for _, uid := range podOrder {
		if p, ok := pods[uid]; ok {
			out = append(out, fact.Input{Time: at, Pod: p})
			delete(pods, uid)
		}
	}
	for _, uid := range eventOrder {
		if e, ok := events[uid]; ok && pods[e.PodUID] == nil && podSeenLive(seen, e.PodUID) {
			out = append(out, fact.Input{Time: at, Event: e})
			delete(events, uid)
		}
	}
	return out
}

// podSeenLive: the API server still has the pod (seen, not deleted).
func podSeenLive(seen []fact.Input, uid string) bool {
	live := false
	for _, x := range seen {
		if x.Pod != nil && x.Pod.UID == uid {
			live = !x.Pod.Deleted
		}
	}
	return live
}

// collect runs a correlator over inputs and returns what it emitted; end
// is Shutdown (a restart) or Flush (the end of a replay).
func collect(seed, inputs []fact.Input, end func(*correlate.Correlator)) []span.Span {
	return collectAfter(nil, seed, inputs, end)
}

// collectAfter is collect for an instance started after one that emitted
// prior: it is given their span IDs, as the daemon gives it the node's
// checkpoint (internal/checkpoint).
func collectAfter(prior []span.Span, seed, inputs []fact.Input, end func(*correlate.Correlator)) []span.Span {
	var spans []span.Span
	ids := make([]span.SpanID, 0, len(prior))
	for _, s := range prior {
		ids = append(ids, s.SpanID)
	}
	c := correlate.New(correlate.Config{Emitted: ids, Sink: span.SinkFunc(func(s span.Span) { spans = append(spans, s) })})
	for _, in := range seed {
		c.Handle(in)
	}
	for _, in := range inputs {
		c.Handle(in)
	}
	end(c)
	return spans
}

// content is what two emissions of one span ID must agree on.
func content(s span.Span) string {
	attrs := make([]string, 0, len(s.Attrs))
	for _, a := range s.Attrs {
		attrs = append(attrs, fmt.Sprintf("%s=%v", a.Key, a.Value))
	}
	sort.Strings(attrs)
	return fmt.Sprintf("%s parent=%s start=%s end=%s %s %q [%s]", s.Name, s.Parent,
		s.Start.UTC().Format(time.RFC3339Nano), s.End.UTC().Format(time.RFC3339Nano),
		s.Status, s.StatusMessage, strings.Join(attrs, " "))
}

// tree is a span's place in its trace.
func tree(s span.Span) string {
	return fmt.Sprintf("%s %s parent=%s", s.TraceID, s.Name, s.Parent)
}

// restartResult is what one cut gave.
type restartResult struct {
	conflicts []string       // span IDs emitted twice with different content
	missing   []string       // spans of the uninterrupted run neither instance emitted
	extra     []string       // spans neither run has in that place
	excused   map[string]int // differences by the named exception that allows them
}

// restartRuns runs the first instance over the inputs before i (then its
// Shutdown) and the second, seeded at the cut, over the rest.
func restartRuns(inputs []fact.Input, i int) (a, b []span.Span) {
	at := restartTime(inputs, i)
	a = collect(nil, inputs[:i], (*correlate.Correlator).Shutdown)
	early, rest := beforeStart(inputs[i:], at)
	b = collectAfter(a, restartSeed(append(slices.Clip(inputs[:i]), early...), at), rest, (*correlate.Correlator).Flush)
	return a, b
}

// beforeStart splits the inputs after the cut: the kernel facts of what
// happened before the second instance started at `at` (they reached the
// first instance's ring buffer after it stopped reading) never reach the
// second, whose probes were not attached then; their effects (a cgroup
// removed, a process gone) are what its start-up scan finds.
func beforeStart(after []fact.Input, at time.Time) (early, rest []fact.Input) {
	for _, x := range after {
		if x.Kernel != nil && x.Kernel.Hdr().Time.Before(at) {
			early = append(early, x)
			continue
		}
		rest = append(rest, x)
	}
	return early, rest
}

func restartAt(inputs []fact.Input, i int, want map[span.SpanID]span.Span) restartResult {
	at := restartTime(inputs, i)
	a, b := restartRuns(inputs, i)
	r := restartResult{excused: map[string]int{}}
	got := map[span.SpanID]span.Span{}
	for _, s := range append(a, b...) {
		if prev, ok := got[s.SpanID]; ok {
			if content(prev) != content(s) {
				r.conflicts = append(r.conflicts, fmt.Sprintf("%s %s:\n  %s\n  %s", s.SpanID, s.Name, content(prev), content(s)))
			}
			continue
		}
		got[s.SpanID] = s
	}
	v := newCutView(inputs, i, at, want)
	for _, s := range a {
		v.first[s.SpanID] = true
	}
	for _, s := range append(a, b...) {
		if s.Name == "pod.restart" {
			v.secondRestart[s.SpanID] = true
		}
	}
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			r.differ(v.missingWhy(w), &r.missing, fmt.Sprintf("%s %s", id, tree(w)))
		case tree(g) != tree(w):
			r.differ(v.movedWhy(g, w), &r.extra, fmt.Sprintf("%s %s, uninterrupted %s", id, tree(g), tree(w)))
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			r.differ(v.extraWhy(g), &r.extra, fmt.Sprintf("%s %s", id, tree(g)))
		}
	}
	sort.Strings(r.missing)
	sort.Strings(r.extra)
	return r
}

// differ counts a difference under its exception, or lists it.
func (r *restartResult) differ(why string, list *[]string, what string) {
	if why != "" {
		r.excused[why]++
		return
	}
	*list = append(*list, what)
}

func TestRestartAtEveryInput(t *testing.T) {
	for _, st := range restartStreams(t) {
		t.Run(st.name, func(t *testing.T) {
			inputs := st.inputs
			want := map[span.SpanID]span.Span{}
			for _, s := range replay(inputs) {
				want[s.SpanID] = s
			}
			conflicts, differences, failed := 0, 0, 0
			excused := map[string]int{}
			for i := 1; i < len(inputs); i++ {
				r := restartAt(inputs, i, want)
				conflicts += len(r.conflicts)
				differences += len(r.missing) + len(r.extra)
				for why, n := range r.excused {
					excused[why] += n
					differences += n
				}
				if len(r.conflicts)+len(r.missing)+len(r.extra) == 0 {
					continue
				}
				if failed++; failed <= 2 {
					t.Errorf("cut before input %d (%s):\nspan IDs emitted twice with different content:\n%s\nmissing:\n%s\nextra or moved:\n%s",
						i, describe(inputs[i]), strings.Join(r.conflicts, "\n"), strings.Join(r.missing, "\n"), strings.Join(r.extra, "\n"))
				}
			}
			t.Logf("%d cuts: %d span IDs emitted twice with different content; %d tree differences, %d of them by named exceptions; %d cuts failed",
				len(inputs)-1, conflicts, differences, differences-excusedLeft(excused, differences), failed)
			for _, why := range slices.Sorted(maps.Keys(excused)) {
				t.Logf("  %d by exception: %s", excused[why], why)
			}
		})
	}
}

// excusedLeft is the differences left without an exception.
func excusedLeft(excused map[string]int, total int) int {
	for _, n := range excused {
		total -= n
	}
	return total
}

// describe names an input for a failure message.
func describe(in fact.Input) string {
	switch {
	case in.Kernel != nil:
		h := in.Kernel.Hdr()
		return fmt.Sprintf("kernel %T pid %d %s", in.Kernel, h.TGID, h.Comm)
	case in.Runtime != nil:
		return "runtime " + string(in.Runtime.Type)
	case in.Progress != nil:
		return "progress " + in.Progress.Source
	case in.Tick:
		return "tick"
	}
	return "other"
}

// restartTime is when the second instance starts for a cut before input
// i: when the first stopped (its last input).
func restartTime(inputs []fact.Input, i int) time.Time {
	var at time.Time
	for _, x := range inputs[:i] {
		if x.Time.After(at) {
			at = x.Time
		}
	}
	return at
}
