package runtime_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// TestSpanTreesAcrossRuntimes: for every scenario, the normalized span
// tree (spanTree) is the same on every runtime. It comes last in the
// package (go test runs files in name order): the scenario tests before it
// leave their results, and what has not run yet in this process (e.g.
// with -run TestSpanTrees) runs here.
func TestSpanTreesAcrossRuntimes(t *testing.T) {
	rts := matrixRuntimes()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, name := range rts {
				if getResult(sc.name, name) == nil {
					runOnRuntime(t, sc, name)
				}
			}
			type tree struct {
				r    *result
				text string
			}
			var trees []tree
			var missing []string
			for _, name := range rts {
				r := getResult(sc.name, name)
				if r == nil || r.spans == nil {
					missing = append(missing, name)
					continue
				}
				trees = append(trees, tree{r, renderTree(spanTree(r.spans))})
			}
			if len(missing) > 0 {
				t.Logf("no span tree from %s: the scenario did not finish there (skipped or failed: see %s/%s)",
					strings.Join(missing, ", "), scenarioTest(sc), strings.Join(missing, ","))
			}
			if len(trees) < 2 {
				setTreeVerdict(sc.name, fmt.Sprintf("not compared (%d tree)", len(trees)))
				t.Skipf("%d runtime(s) produced a tree; nothing to compare", len(trees))
			}
			ref := trees[0]
			var differ []string
			t.Logf("span tree on %s (%s):\n%s", ref.r.runtime.Name, ref.r.versions.Runtime, ref.text)
			for _, o := range trees[1:] {
				if d := lineDiff(ref.text, o.text); d != "" {
					differ = append(differ, fmt.Sprintf("%s differs from %s (%d lines)", o.r.runtime.Name, ref.r.runtime.Name, diffLines(d)))
					t.Errorf("%s: the span tree on %s (%s) differs from %s (%s); - only on %s, + only on %s:\n%s\n"+
						"--- spans on %s:\n%s--- spans on %s:\n%s",
						sc.name, o.r.runtime.Name, o.r.versions.Runtime, ref.r.runtime.Name, ref.r.versions.Runtime,
						ref.r.runtime.Name, o.r.runtime.Name, d,
						ref.r.runtime.Name, spansText(ref.r.spans), o.r.runtime.Name, spansText(o.r.spans))
				} else {
					t.Logf("%s (%s): same tree", o.r.runtime.Name, o.r.versions.Runtime)
				}
			}
			verdict := "same on " + fmt.Sprint(len(trees)) + " runtimes"
			if len(differ) > 0 {
				verdict = "DIFFERENT: " + strings.Join(differ, "; ")
			}
			if len(missing) > 0 {
				verdict += " (no tree from " + strings.Join(missing, ", ") + ")"
			}
			setTreeVerdict(sc.name, verdict)
		})
	}
	t.Logf("time per runtime (harness start, scenario, cleanup):\n%s", timingTable(rts))
}

func diffLines(d string) int {
	n := 0
	for _, l := range strings.Split(d, "\n") {
		if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "+ ") {
			n++
		}
	}
	return n
}

// A span tree, normalized so that two runs of one scenario compare equal
// when podchron told the same story: span names, parent/child structure,
// status (and message, numbers masked), every attribute and span event that
// describes what happened (exit cause, code and signal, signal, disposition,
// sigkill, overrun, sender kind, OOM scope, CNI plugin and command, ...) —
// but nothing that differs between any two runs: timestamps, durations,
// trace/span/container ids, pids, comms (the runtime's own comm differs by
// runtime and version: runc, exe, 6, crun), netns and cgroup paths, rss
// figures.
// Siblings are sorted by their rendering, so the order in which concurrent
// spans (the CNI plugins) were emitted does not matter; span events keep
// their order in time.

// volatileAttr reports whether an attribute is left out of the tree.
func volatileAttr(k string) bool {
	switch k {
	case names.ContainerID, names.K8sPodUID, names.K8sPodName, names.K8sNodeName,
		names.CNINetNS, names.GapUntil, names.OOMMemcg,
		names.BackoffSeconds, names.PastDeadlineSeconds,
		// Durations in words, and which start-up phase took longest: the
		// runtimes differ in speed, not in the tree.
		names.Verdict, names.StartupLongPole, names.StartupLongPoleSeconds:
		return true
	}
	return strings.HasSuffix(k, ".pid") || strings.HasSuffix(k, ".comm") ||
		strings.HasSuffix(k, "_kb") || strings.HasSuffix(k, "_bytes")
}

var digits = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

type treeNode struct {
	line     string
	events   []string
	children []*treeNode
}

// spanTree builds the normalized tree(s) of one pod's spans; spans whose
// parent is not among them hang at the top level, marked.
func spanTree(all []span.Span) []*treeNode {
	nodes := make(map[span.SpanID]*treeNode, len(all))
	for _, sp := range all {
		nodes[sp.SpanID] = &treeNode{line: spanLine(sp), events: eventLines(sp)}
	}
	var roots []*treeNode
	for _, sp := range all {
		n := nodes[sp.SpanID]
		switch parent, ok := nodes[sp.Parent]; {
		case sp.Parent.IsZero():
			roots = append(roots, n)
		case ok:
			parent.children = append(parent.children, n)
		default:
			n.line += "   (parent span missing)"
			roots = append(roots, n)
		}
	}
	sortTree(roots)
	return roots
}

func spanLine(sp span.Span) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s", sp.Name, sp.Status)
	if sp.StatusMessage != "" {
		fmt.Fprintf(&b, ": %s", digits.ReplaceAllString(sp.StatusMessage, "N"))
	}
	b.WriteString("]")
	b.WriteString(attrString(sp.Attrs))
	return b.String()
}

func eventLines(sp span.Span) []string {
	var out []string
	evs := append([]span.SpanEvent(nil), sp.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	for _, ev := range evs {
		out = append(out, "• "+ev.Name+attrString(ev.Attrs))
	}
	return out
}

func attrString(attrs []span.Attr) string {
	var kv []string
	for _, a := range attrs {
		if volatileAttr(a.Key) {
			continue
		}
		kv = append(kv, fmt.Sprintf("%s=%v", a.Key, a.Value))
	}
	sort.Strings(kv)
	if len(kv) == 0 {
		return ""
	}
	return " " + strings.Join(kv, " ")
}

func sortTree(ns []*treeNode) {
	for _, n := range ns {
		sortTree(n.children)
	}
	sort.SliceStable(ns, func(i, j int) bool { return ns[i].render("") < ns[j].render("") })
}

func (n *treeNode) render(indent string) string {
	var b strings.Builder
	b.WriteString(indent + n.line + "\n")
	for _, e := range n.events {
		b.WriteString(indent + "    " + e + "\n")
	}
	for _, c := range n.children {
		b.WriteString(c.render(indent + "  "))
	}
	return b.String()
}

// renderTree is the tree as text, one span (or span event, •) a line,
// children indented under their parent.
func renderTree(roots []*treeNode) string {
	var b strings.Builder
	for _, r := range roots {
		b.WriteString(r.render(""))
	}
	return b.String()
}

// lineDiff is a unified-style diff of two texts: "  " both, "- " only in
// a, "+ " only in b. Empty when they are equal.
func lineDiff(a, b string) string {
	if a == b {
		return ""
	}
	x := strings.Split(strings.TrimRight(a, "\n"), "\n")
	y := strings.Split(strings.TrimRight(b, "\n"), "\n")
	// Longest common subsequence, table from the end.
	l := make([][]int, len(x)+1)
	for i := range l {
		l[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || l[i+1][j] >= l[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return out.String()
}
