package correlate_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/record"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded inputs")

// The recorded inputs in testdata/*.jsonl were written by
// `go test ./test/runtime -args -record-dir=…` on a real run (real kernel
// probes, real containerd, CNI plugins). Each is replayed as recorded and in
// variants the model must survive: kernel exits missing, and the tracer
// starting in the middle of the pod's life.

func load(t *testing.T, path string) []fact.Input {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := record.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func replay(inputs []fact.Input) []span.Span {
	var spans []span.Span
	c := correlate.New(correlate.Config{Sink: span.SinkFunc(func(s span.Span) { spans = append(spans, s) })})
	for _, in := range inputs {
		c.Handle(in)
	}
	c.Flush()
	return spans
}

// render prints the span trees, children under parents, times relative to
// each trace's root.
func render(spans []span.Span) string {
	byTrace := map[span.TraceID][]span.Span{}
	var traces []span.TraceID
	for _, s := range spans {
		if _, ok := byTrace[s.TraceID]; !ok {
			traces = append(traces, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	var b strings.Builder
	for _, tid := range traces {
		ss := byTrace[tid]
		var root *span.Span
		children := map[span.SpanID][]span.Span{}
		for i := range ss {
			if ss[i].Parent.IsZero() {
				root = &ss[i]
			} else {
				children[ss[i].Parent] = append(children[ss[i].Parent], ss[i])
			}
		}
		if root == nil {
			fmt.Fprintf(&b, "trace %s: NO ROOT SPAN\n", tid)
			continue
		}
		fmt.Fprintf(&b, "trace %s\n", tid)
		var walk func(s span.Span, depth int)
		walk = func(s span.Span, depth int) {
			fmt.Fprintf(&b, "%s%s +%dms %dms %s", strings.Repeat("  ", depth), s.Name,
				s.Start.Sub(root.Start).Milliseconds(), s.Duration().Milliseconds(), s.Status)
			if s.StatusMessage != "" {
				fmt.Fprintf(&b, " %q", s.StatusMessage)
			}
			b.WriteString("\n")
			attrs := append([]span.Attr(nil), s.Attrs...)
			sort.SliceStable(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
			for _, a := range attrs {
				fmt.Fprintf(&b, "%s  | %s=%v\n", strings.Repeat("  ", depth), a.Key, a.Value)
			}
			for _, e := range s.Events {
				fmt.Fprintf(&b, "%s  * %s +%dms\n", strings.Repeat("  ", depth), e.Name, e.Time.Sub(root.Start).Milliseconds())
			}
			kids := children[s.SpanID]
			sort.SliceStable(kids, func(i, j int) bool {
				if !kids[i].Start.Equal(kids[j].Start) {
					return kids[i].Start.Before(kids[j].Start)
				}
				return kids[i].Name < kids[j].Name
			})
			for _, k := range kids {
				walk(k, depth+1)
			}
			delete(children, s.SpanID)
		}
		walk(*root, 0)
		for parent, orphans := range children {
			for _, o := range orphans {
				fmt.Fprintf(&b, "ORPHAN %s (parent %s)\n", o.Name, parent)
			}
		}
	}
	return b.String()
}

// withoutInitExits drops the kernel's exit events of container processes:
// the runtime's view must still close each container's run.
func withoutInitExits(in []fact.Input) []fact.Input {
	var out []fact.Input
	for _, x := range in {
		if e, ok := x.Kernel.(*kernel.ExitEvent); ok && e.Origin&kernel.OriginWatched != 0 {
			continue
		}
		out = append(out, x)
	}
	return out
}

// midLife starts the stream at the first SIGTERM: what came before is only
// known as a start-up scan would find it (cgroups that exist, processes that
// live).
func midLife(in []fact.Input) []fact.Input {
	cut := -1
	for i, x := range in {
		if s, ok := x.Kernel.(*kernel.SignalEvent); ok && s.Signal == syscall.SIGTERM {
			cut = i
			break
		}
	}
	if cut < 0 {
		return nil
	}
	at := in[cut].Time
	var start fact.Start
	cgroups := map[uint64]string{}
	var order []uint64
	procs := map[uint32]*fact.ProcSeen{}
	for _, x := range in[:cut] {
		switch {
		case x.Start != nil:
			start = *x.Start
		case x.Cgroup != nil:
			cgroups[x.Cgroup.ID] = x.Cgroup.Path
			order = append(order, x.Cgroup.ID)
		}
		switch e := x.Kernel.(type) {
		case *kernel.CgroupEvent:
			if e.Type == kernel.EventCgroupMkdir {
				cgroups[e.ID] = e.Path
				order = append(order, e.ID)
			} else {
				delete(cgroups, e.ID)
			}
		case *kernel.ExecEvent:
			if e.Origin&kernel.OriginWatched != 0 {
				procs[e.TGID] = &fact.ProcSeen{PID: e.TGID, PPID: e.PPID, CgroupID: e.CgroupID, Comm: e.Comm, Args: e.Args, Started: e.Time}
			}
		case *kernel.ExitEvent:
			delete(procs, e.TGID)
		}
	}
	start.At = at
	out := []fact.Input{{Time: at, Start: &start}}
	seen := map[uint64]bool{}
	for _, id := range order {
		if p, ok := cgroups[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, fact.Input{Time: at, Cgroup: &fact.CgroupSeen{ID: id, Path: p}})
		}
	}
	pids := make([]int, 0, len(procs))
	for pid := range procs {
		pids = append(pids, int(pid))
	}
	sort.Ints(pids)
	for _, pid := range pids {
		out = append(out, fact.Input{Time: at, Proc: procs[uint32(pid)]})
	}
	for _, x := range in[cut:] {
		if x.Runtime != nil && x.Runtime.Phase == "initial" {
			continue
		}
		out = append(out, x)
	}
	return out
}

// recorded loads every recorded run in testdata with its golden variants
// (as recorded, kernel exits missing, tracer started mid-life), by name.
type recordedRun struct {
	base     string
	inputs   []fact.Input
	variants map[string][]fact.Input // by suffix
}

func recorded(t *testing.T) []recordedRun {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded inputs in testdata")
	}
	var runs []recordedRun
	for _, f := range files {
		inputs := load(t, f)
		variants := map[string][]fact.Input{
			"":                 inputs,
			"-no-kernel-exits": withoutInitExits(inputs),
		}
		if m := midLife(inputs); m != nil {
			variants["-mid-life"] = m
		}
		runs = append(runs, recordedRun{base: strings.TrimSuffix(filepath.Base(f), ".jsonl"), inputs: inputs, variants: variants})
	}
	return runs
}

func TestGoldenReplays(t *testing.T) {
	for _, run := range recorded(t) {
		base, variants := run.base, run.variants
		for suffix, in := range variants {
			name := base + suffix
			t.Run(name, func(t *testing.T) {
				got := render(replay(in))
				if again := render(replay(in)); again != got {
					t.Fatal("two replays of the same inputs gave different spans")
				}
				if strings.Contains(got, "ORPHAN") || strings.Contains(got, "NO ROOT") {
					t.Errorf("broken span tree:\n%s", got)
				}
				golden := filepath.Join("testdata", name+".golden")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(want, []byte(got)) {
					t.Errorf("spans differ from %s (run with -update after checking):\n%s", golden, got)
				}
			})
		}
	}
}
