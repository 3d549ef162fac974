package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/export/console"
)

func loadSpans(t *testing.T, path string) []span.Span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []span.Span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		s, err := console.ParseJSON(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
	return out
}

// TestCheckRight: a real run of the five scenarios (Debian's runc 1.1.5,
// kernel 6.18) whose traces are all right.
func TestCheckRight(t *testing.T) {
	all := loadSpans(t, "testdata/right.jsonl")
	for _, s := range scenarios() {
		v := check(all, s.want)
		if len(v.problems) > 0 {
			t.Errorf("%s: %v", v.pod, v.problems)
		}
		t.Logf("%s: %s", v.pod, v.summary)
	}
}

// TestCheckCatchesBootstrap: a real run by the tracer before the model knew
// runc 1.1.5's bootstrap (/usr/sbin/runc init, exec'd from /dev/fd/6): the
// graceful pod's run is `runc init` and its stop is missing; the crash
// loop's pod has no pod.termination. The check says so, and finds the other
// pods of that run right.
func TestCheckCatchesBootstrap(t *testing.T) {
	all := loadSpans(t, "testdata/runc-init-as-pid1.jsonl")
	wrong := map[string][]string{
		"demo/web": {"is the runtime's bootstrap", `process.command_args ["/usr/sbin/runc" "init"], want the container's command`,
			"want 1 container.stop span, got 0"},
		"demo/crasher": {"want 1 pod.termination span, got 0"},
	}
	for _, s := range scenarios() {
		v := check(all, s.want)
		want, isWrong := wrong[s.want.pod]
		if !isWrong {
			if len(v.problems) > 0 {
				t.Errorf("%s: %v", v.pod, v.problems)
			}
			continue
		}
		got := strings.Join(v.problems, "\n")
		t.Logf("%s:\n%s", v.pod, got)
		if len(v.problems) != len(want) {
			t.Errorf("%s: %d problems, want %d", v.pod, len(v.problems), len(want))
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: problems do not say %q", v.pod, w)
			}
		}
	}
}

func TestBootstrap(t *testing.T) {
	for _, a := range [][]string{
		{"/usr/sbin/runc", "init"}, {"runc", "init"}, {"runc:[2:INIT]"}, {"/proc/self/fd/7", "init"},
		{"/dev/fd/6", "init"}, {"/usr/bin/crun", "create"}, {"crun"},
	} {
		if !bootstrap(a) {
			t.Errorf("%q: not a bootstrap", a)
		}
	}
	for _, a := range [][]string{{"sh", "-c", "exit 1"}, {"sleep", "1000"}, {"/sbin/init"}, {"my-app", "init"}, nil} {
		if bootstrap(a) {
			t.Errorf("%q: a bootstrap", a)
		}
	}
}

// TestParseSpanLossless: the spans the demo parses are the spans the tracer
// printed — written back with the console's JSON printer they are the same
// bytes, line for line (so the text timeline the demo renders from them is
// the tracer's own).
func TestParseSpanLossless(t *testing.T) {
	for _, path := range []string{"testdata/right.jsonl", "testdata/runc-init-as-pid1.jsonl"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		p := console.New(&out, console.Config{Format: console.FormatJSON})
		for _, s := range loadSpans(t, path) {
			p.Emit(s)
		}
		p.Close()
		want := strings.Split(strings.TrimSpace(string(b)), "\n")
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines back, want %d", path, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s:%d:\n got %s\nwant %s", path, i+1, got[i], want[i])
			}
		}
	}
}

// TestPIDCheck: the runs' process.pid are held against CRI's PIDs, run by
// run; a PID CRI never gave (0: the run had exited) is not compared.
func TestPIDCheck(t *testing.T) {
	all := loadSpans(t, "testdata/right.jsonl")
	var runs []int64
	for _, s := range named(all, names.SpanContainerRun) {
		if podOf(s) == "demo/crasher" {
			runs = append(runs, s.Attr(names.ProcessPID).(int64))
		}
	}
	if len(runs) != crashAttempt {
		t.Fatalf("testdata: %d crasher runs", len(runs))
	}
	right := &criPIDs{pids: map[string][]int{"demo/crasher": {int(runs[0]), 0, int(runs[2])}}}
	if p, n := right.check(all, "demo/crasher"); len(p) > 0 || n != 2 {
		t.Errorf("right pids: problems %v, %d compared; want none, 2", p, n)
	}
	// The host's numbers for a node inside a container, say.
	wrong := &criPIDs{pids: map[string][]int{"demo/crasher": {int(runs[0]), int(runs[1]) + 1000}}}
	p, n := wrong.check(all, "demo/crasher")
	if n != 2 || len(p) != 1 || !strings.Contains(p[0], "container.run #2") {
		t.Errorf("a wrong pid for run #2: problems %v, %d compared", p, n)
	}
}

// TestCheckOOMGroupKill: the OOM pod's run on a pure cgroup v2 node is
// held against the kernel's figures: scope and memcg on the run and every
// oom_kill event, at least two kills of distinct processes, no more than
// memory.events' oom_kill.
func TestCheckOOMGroupKill(t *testing.T) {
	const cg = "/podchron-e2e-1/burstable/pod1/c1"
	kill := func(pid int64, scope, memcg string) span.SpanEvent {
		return span.SpanEvent{Name: names.EventOOMKill, Attrs: []span.Attr{
			span.Int(names.OOMVictimPID, pid), span.String(names.OOMScope, scope), span.String(names.OOMMemcg, memcg)}}
	}
	run := func(scope string, kills ...span.SpanEvent) span.Span {
		return span.Span{Name: names.SpanContainerRun, Events: kills,
			Attrs: []span.Attr{span.String(names.OOMScope, scope), span.String(names.OOMMemcg, cg)}}
	}
	want := runWant{oomScope: "container", oomMemcg: cg, oomKills: 3}
	for _, tc := range []struct {
		name    string
		run     span.Span
		problem string // "" for right
	}{
		{"group kill, right", run("container", kill(7, "container", cg), kill(8, "container", cg)), ""},
		{"one kill only", run("container", kill(7, "container", cg)), "1 oom_kill events, want a group kill: 2 to 3"},
		{"a victim taken for the node's", run("container", kill(7, "container", cg), kill(8, "node", "")), "oom_kill of pid 8: scope node, want container"},
		{"run's scope", run("node", kill(7, "container", cg), kill(8, "container", cg)), "OOM scope node, want container"},
		{"a victim twice", run("container", kill(7, "container", cg), kill(7, "container", cg)), "oom_kill of pid 7 twice"},
		{"more kills than the kernel's", run("container", kill(7, "container", cg), kill(8, "container", cg), kill(9, "container", cg), kill(10, "container", cg)),
			"4 oom_kill events, want a group kill: 2 to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := checkOOM(tc.run, want)
			got := strings.Join(problems, "; ")
			if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Errorf("problems %q, want %q", got, tc.problem)
			}
		})
	}
}
