package main

// The demo's self-check: the tracer runs with --output json, every span it
// emits is parsed here (and, in text mode, rendered with the tracer's own
// console printer), and each pod's trace is held against what the scenario
// did to it. A wrong answer is never printed silently.

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// collector keeps every span the tracer printed, by pod name.
type collector struct {
	mu    sync.Mutex
	spans []span.Span
	bad   []string // lines that were not spans
	seen  chan struct{}
}

func newCollector() *collector { return &collector{seen: make(chan struct{}, 1)} }

func (c *collector) add(s span.Span) {
	c.mu.Lock()
	c.spans = append(c.spans, s)
	c.mu.Unlock()
	select {
	case c.seen <- struct{}{}:
	default:
	}
}

func (c *collector) all() []span.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]span.Span(nil), c.spans...)
}

// waitRoot waits until the pod's root span ("pod": the pod is gone) arrived.
func (c *collector) waitRoot(pod string, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		for _, s := range c.all() {
			if s.Name == "pod" && podOf(s) == pod {
				return true
			}
		}
		select {
		case <-c.seen:
		case <-deadline.C:
			return false
		}
	}
}

func res(s span.Span, k string) string {
	for _, a := range s.Resource {
		if a.Key == k {
			return fmt.Sprint(a.Value)
		}
	}
	return ""
}

func podOf(s span.Span) string {
	return res(s, names.K8sNamespaceName) + "/" + res(s, names.K8sPodName)
}

// ---- what each pod's trace must say ----------------------------------------

// runWant is one container.run of a pod, in start order.
type runWant struct {
	args     []string // process.command_args: the command the pod spec gave
	cause    string   // podchron.exit.cause
	signal   string   // podchron.signal (killing signal), "" for an exit code
	exitCode int64    // process.exit.code when signal == ""
	// signalEvent, when set, must be on the run: a signal with this
	// name, sender kind and result ("SIGKILL", "in_pod", "ignored").
	signalEvent *signalWant
	// oomScope, when set: podchron.oom.scope of the run (which limit ran
	// out) and of each of its oom_kill events.
	oomScope string
	// oomMemcg, when set: podchron.oom.memcg, the cgroup whose limit ran
	// out, on the run and each oom_kill event.
	oomMemcg string
	// oomKills, when > 0: the kernel's count of OOM kills in the
	// container (memory.events' oom_kill): the run must have at least two
	// oom_kill events (a group kill), each of another process, and no more
	// than the kernel counted.
	oomKills int
}

type signalWant struct{ sig, senderKind, result string }

// stopWant is the pod's container.stop (nil: none expected, none checked).
type stopWant struct {
	disposition string // podchron.signal.disposition of the SIGTERM
	sigkill     bool   // podchron.sigkill: SIGKILL at the end of the timeout
}

type podWant struct {
	pod      string // namespace/name
	runs     []runWant
	backoffs int // container.backoff spans
	stop     *stopWant
	overrun  bool // pod.termination's podchron.grace_period.overrun
}

// bootstrap tells a container runtime's own process (its bootstrap before
// the container's exec, such as `runc init`) taken for the container's PID 1.
func bootstrap(args []string) bool {
	if len(args) == 0 {
		return false
	}
	base := filepath.Base(args[0])
	for _, rt := range []string{"runc", "crun", "youki", "runsc", "kata-runtime", "conmon", "containerd-shim"} {
		if base == rt || strings.HasPrefix(base, rt+":") || strings.HasPrefix(base, rt+"-") {
			return true
		}
	}
	// runc's re-exec of itself: /proc/self/exe init, /dev/fd/6 init, ...
	return len(args) >= 2 && args[1] == "init" && (strings.HasPrefix(args[0], "/proc/") || strings.HasPrefix(args[0], "/dev/fd/") || strings.Contains(args[0], "runc"))
}

func strs(v any) []string {
	ss, _ := v.([]string)
	return ss
}

func quoteArgs(a []string) string {
	if a == nil {
		return "(none)"
	}
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

func eq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func named(all []span.Span, name string) []span.Span {
	var out []span.Span
	for _, s := range all {
		if s.Name == name {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// verdict is one pod's result: problems (empty: right) and a one-line
// summary of what the trace says.
type verdict struct {
	pod      string
	summary  string
	problems []string
}

// check holds one pod's spans against what the scenario did.
func check(all []span.Span, w podWant) verdict {
	var spans []span.Span
	for _, s := range all {
		if podOf(s) == w.pod {
			spans = append(spans, s)
		}
	}
	v := verdict{pod: w.pod}
	bad := func(f string, a ...any) { v.problems = append(v.problems, fmt.Sprintf(f, a...)) }
	var sum []string
	if len(spans) == 0 {
		bad("no spans at all")
		return v
	}
	if len(named(spans, "pod")) != 1 {
		bad("want 1 root span \"pod\" (the pod is gone), got %d", len(named(spans, "pod")))
	}

	// Every container run: never a runtime's bootstrap for PID 1.
	for _, name := range []string{names.SpanContainerRun, names.SpanContainerInit} {
		for _, s := range named(spans, name) {
			if a := strs(s.Attr(names.ProcessCommandArgs)); bootstrap(a) {
				bad("%s of %v: process.command_args %s is the runtime's bootstrap, not the container's PID 1 (pid %v)",
					name, s.Attr(names.K8sContainerName), quoteArgs(a), s.Attr(names.ProcessPID))
			}
		}
	}

	runs := named(spans, names.SpanContainerRun)
	if len(runs) != len(w.runs) {
		bad("want %d container.run spans, got %d", len(w.runs), len(runs))
	}
	for i, want := range w.runs {
		if i >= len(runs) {
			break
		}
		r := runs[i]
		what := names.SpanContainerRun
		if len(w.runs) > 1 {
			what = fmt.Sprintf("container.run #%d", i+1)
		}
		got := fmt.Sprint(r.Attr(names.ExitCause))
		if got != want.cause {
			bad("%s: cause %s, want %s", what, got, want.cause)
		}
		if want.signal != "" {
			if s := fmt.Sprint(r.Attr(names.SignalName)); s != want.signal {
				bad("%s: signal %s, want %s", what, s, want.signal)
			}
		} else if c, ok := r.Attr(names.ProcessExitCode).(int64); !ok || c != want.exitCode {
			bad("%s: exit code %v (signal %v), want %d", what, r.Attr(names.ProcessExitCode), r.Attr(names.SignalName), want.exitCode)
		}
		if a := strs(r.Attr(names.ProcessCommandArgs)); !eq(a, want.args) {
			bad("%s: process.command_args %s, want the container's command %s", what, quoteArgs(a), quoteArgs(want.args))
		}
		if rc, _ := r.Attr(names.K8sContainerRestartCount).(int64); rc != int64(i) && len(w.runs) > 1 {
			bad("%s: restart count %d, want %d", what, rc, i)
		}
		if sw := want.signalEvent; sw != nil {
			found := false
			for _, ev := range r.Events {
				m := map[string]any{}
				for _, a := range ev.Attrs {
					m[a.Key] = a.Value
				}
				if ev.Name == "signal "+sw.sig && m[names.SignalSenderKind] == sw.senderKind && m[names.SignalResult] == sw.result {
					found = true
				}
			}
			if !found {
				bad("%s: no %s event from sender kind %s with result %s", what, sw.sig, sw.senderKind, sw.result)
			}
		}
		if want.oomScope != "" || want.oomMemcg != "" || want.oomKills > 0 {
			oomSum, problems := checkOOM(r, want)
			for _, p := range problems {
				bad("%s: %s", what, p)
			}
			sum = append(sum, oomSum)
		}
		s := got
		if want.signal != "" {
			s += " " + fmt.Sprint(r.Attr(names.SignalName))
		} else {
			s += fmt.Sprintf(" exit=%v", r.Attr(names.ProcessExitCode))
		}
		if i == 0 {
			sum = append(sum, fmt.Sprintf("run %s %s", quoteArgs(strs(r.Attr(names.ProcessCommandArgs))), s))
		} else {
			sum = append(sum, fmt.Sprintf("run #%d %s", i+1, s))
		}
		if want.signalEvent != nil {
			sum = append(sum, fmt.Sprintf("%s from %s %s", want.signalEvent.sig, want.signalEvent.senderKind, want.signalEvent.result))
		}
	}
	if b := len(named(spans, names.SpanContainerBackoff)); b != w.backoffs {
		bad("want %d container.backoff spans, got %d", w.backoffs, b)
	} else if b > 0 {
		sum = append(sum, fmt.Sprintf("%d back-offs", b))
	}

	stops := named(spans, names.SpanContainerStop)
	if w.stop != nil {
		if len(stops) != 1 {
			bad("want 1 container.stop span, got %d", len(stops))
		} else {
			s := stops[0]
			d := fmt.Sprint(s.Attr(names.SignalDisposition))
			if d != w.stop.disposition {
				bad("container.stop: SIGTERM disposition %s, want %s", d, w.stop.disposition)
			}
			if k, _ := s.Attr(names.Sigkill).(bool); k != w.stop.sigkill {
				bad("container.stop: sigkill %v, want %v", k, w.stop.sigkill)
			}
			if sk := fmt.Sprint(s.Attr(names.SignalSenderKind)); sk != "runtime" {
				bad("container.stop: SIGTERM sender kind %s, want runtime", sk)
			}
			t := fmt.Sprintf("stop SIGTERM %s", d)
			if w.stop.sigkill {
				t += " +SIGKILL"
			}
			sum = append(sum, fmt.Sprintf("%s in %s", t, s.Duration().Round(time.Millisecond)))
		}
	}

	terms := named(spans, names.SpanPodTermination)
	if len(terms) != 1 {
		bad("want 1 pod.termination span, got %d", len(terms))
	} else {
		o, _ := terms[0].Attr(names.GracePeriodOverrun).(bool)
		if o != w.overrun {
			bad("pod.termination: grace period overrun %v, want %v", o, w.overrun)
		}
		t := "termination"
		if o {
			t += " overrun"
		}
		sum = append(sum, t)
	}
	v.summary = strings.Join(sum, "; ")
	return v
}

// checkOOM holds a run's OOM attributes and oom_kill events against want;
// it returns a summary and the problems.
func checkOOM(r span.Span, want runWant) (string, []string) {
	var problems []string
	scope, memcg := fmt.Sprint(r.Attr(names.OOMScope)), fmt.Sprint(r.Attr(names.OOMMemcg))
	if want.oomScope != "" && scope != want.oomScope {
		problems = append(problems, fmt.Sprintf("OOM scope %s, want %s", scope, want.oomScope))
	}
	if want.oomMemcg != "" && memcg != want.oomMemcg {
		problems = append(problems, fmt.Sprintf("OOM memcg %s, want %s", memcg, want.oomMemcg))
	}
	kills := 0
	victims := map[string]bool{}
	for _, ev := range r.Events {
		if ev.Name != names.EventOOMKill {
			continue
		}
		kills++
		m := map[string]any{}
		for _, a := range ev.Attrs {
			m[a.Key] = a.Value
		}
		pid := fmt.Sprint(m[names.OOMVictimPID])
		if victims[pid] {
			problems = append(problems, fmt.Sprintf("oom_kill of pid %s twice", pid))
		}
		victims[pid] = true
		if want.oomScope != "" && fmt.Sprint(m[names.OOMScope]) != want.oomScope {
			problems = append(problems, fmt.Sprintf("oom_kill of pid %v: scope %v, want %s", m[names.OOMVictimPID], m[names.OOMScope], want.oomScope))
		}
		if want.oomMemcg != "" && fmt.Sprint(m[names.OOMMemcg]) != want.oomMemcg {
			problems = append(problems, fmt.Sprintf("oom_kill of pid %v: memcg %v, want %s", m[names.OOMVictimPID], m[names.OOMMemcg], want.oomMemcg))
		}
	}
	if want.oomKills > 0 && (kills < 2 || kills > want.oomKills) {
		problems = append(problems, fmt.Sprintf("%d oom_kill events, want a group kill: 2 to %d (the kernel's memory.events oom_kill)", kills, want.oomKills))
	}
	return fmt.Sprintf("OOM scope %s, %d oom_kill events", scope, kills), problems
}
