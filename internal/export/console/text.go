// The text rendering: blocks, tree lines, the attributes worth a column.

package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/correlate"
)

func (p *Printer) header(ts *traceState, what string) {
	b := &p.buf
	b.WriteString("── pod ")
	b.WriteString(podName(ts.res))
	if what != "" {
		b.WriteString(" · ")
		b.WriteString(what)
	}
	if n := resAttr(ts.res, "k8s.node.name"); n != "" {
		b.WriteString(" · node ")
		b.WriteString(n)
	}
	b.WriteString(" · trace ")
	b.WriteString(ts.id.String())
	if !ts.base.IsZero() {
		b.WriteString(" · t0 ")
		b.WriteString(ts.base.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
	b.WriteByte('\n')
}

func (p *Printer) printBlock(ts *traceState, top correlate.Span, depth int, note string) {
	ts.setBase(top)
	tree := p.take(ts, top.SpanID)
	what := top.Name
	if note != "" {
		what += " (" + note + ")"
	}
	p.header(ts, what)
	p.printTree(ts, top, depth, tree)
}

func (p *Printer) printTree(ts *traceState, s correlate.Span, depth int, tree map[correlate.SpanID][]correlate.Span) {
	p.line(ts, &s, depth)
	ts.printed[s.SpanID] = depth
	for _, c := range tree[s.SpanID] {
		p.printTree(ts, c, depth+1, tree)
	}
}

// printOrphans prints buffered spans whose phase never came: every span
// whose parent is not buffered starts a tree.
func (p *Printer) printOrphans(ts *traceState, why string) {
	var tops []correlate.Span
	for _, s := range ts.pending {
		if _, ok := ts.pending[s.Parent]; !ok {
			tops = append(tops, s)
		}
	}
	ts.setBase()
	sortSpans(tops)
	p.header(ts, why)
	for _, top := range tops {
		if _, still := ts.pending[top.SpanID]; !still {
			continue
		}
		delete(ts.pending, top.SpanID)
		p.pending--
		depth := 0
		if d, ok := ts.printed[top.Parent]; ok {
			depth = d + 1
		}
		tree := p.take(ts, top.SpanID)
		p.printTree(ts, top, depth, tree)
	}
	// Cycles (a span its own ancestor) leave spans no tree reached.
	if len(ts.pending) > 0 {
		rest := make([]correlate.Span, 0, len(ts.pending))
		for _, s := range ts.pending {
			rest = append(rest, s)
		}
		sortSpans(rest)
		for _, s := range rest {
			delete(ts.pending, s.SpanID)
			p.pending--
			p.line(ts, &s, 0)
		}
	}
}

// finish prints what is left of a pod and its summary line.
func (p *Printer) finish(ts *traceState, root correlate.Span) {
	if len(root.Resource) > 0 {
		ts.res = root.Resource
	}
	ts.setBase(root)
	if len(ts.pending) > 0 {
		p.printOrphans(ts, "spans without a finished phase")
	}
	b := &p.buf
	b.WriteString("══ pod ")
	b.WriteString(podName(ts.res))
	b.WriteString(" · ")
	b.WriteString(root.Name)
	b.WriteString(" ")
	b.WriteString(fmtDur(root.Duration()))
	fmt.Fprintf(b, " (%s → %s)", fmtOffset(root.Start.Sub(ts.base)), fmtOffset(root.End.Sub(ts.base)))
	b.WriteString(" · ")
	b.WriteString(statusWord(root.Status))
	if root.StatusMessage != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(root.StatusMessage))
	}
	fmt.Fprintf(b, " · %s, %s", plural(ts.phases, "phase"), plural(ts.spans, "span"))
	if a := p.attrText(&root); a != "" {
		b.WriteString(" ·")
		b.WriteString(a)
	}
	b.WriteByte('\n')
	if evs := root.Events; len(evs) > 0 {
		for i := range evs {
			p.eventLine(ts, &evs[i], 0)
		}
	}
	p.stats.Pods++
	p.lru.Remove(ts.elem)
	delete(p.traces, ts.id)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func statusWord(s correlate.Status) string {
	switch s {
	case correlate.StatusOK:
		return "ok"
	case correlate.StatusError:
		return "ERROR"
	}
	return "unset"
}

func statusCol(s correlate.Status) string {
	switch s {
	case correlate.StatusOK:
		return "ok"
	case correlate.StatusError:
		return "ERR"
	}
	return ""
}

// line prints one span: offset, duration, status, indented name, key
// attributes; then its events.
func (p *Printer) line(ts *traceState, s *correlate.Span, depth int) {
	b := &p.buf
	fmt.Fprintf(b, "  %9s %9s  %-3s  %s%s", fmtOffset(s.Start.Sub(ts.base)), fmtDur(s.Duration()),
		statusCol(s.Status), strings.Repeat("  ", depth), s.Name)
	b.WriteString(p.attrText(s))
	if s.Status == correlate.StatusError && s.StatusMessage != "" {
		b.WriteString(" error=")
		b.WriteString(strconv.Quote(s.StatusMessage))
	} else if s.StatusMessage != "" {
		b.WriteString(" note=")
		b.WriteString(strconv.Quote(s.StatusMessage))
	}
	b.WriteByte('\n')
	for i := range s.Events {
		p.eventLine(ts, &s.Events[i], depth+1)
	}
}

func (p *Printer) eventLine(ts *traceState, ev *correlate.SpanEvent, depth int) {
	b := &p.buf
	fmt.Fprintf(b, "  %9s %9s  %-3s  %s• %s", fmtOffset(ev.Time.Sub(ts.base)), "", "",
		strings.Repeat("  ", depth), ev.Name)
	b.WriteString(renderAttrs(ev.Attrs, ev.Name, p.cfg.Verbose))
	b.WriteByte('\n')
}

func (p *Printer) attrText(s *correlate.Span) string {
	return renderAttrs(s.Attrs, s.Name, p.cfg.Verbose)
}

// keyAttrs are the attributes the text timeline shows, in this order, with
// their short labels.
var keyAttrs = []struct{ key, label string }{
	{"k8s.container.name", "container"},
	{"podchron.probe.type", "probe"},
	{"podchron.probe.result", "result"},
	{"podchron.cni.command", "cmd"},
	{"podchron.cni.plugin", "plugin"},
	{"process.exit.code", "exit"},
	{"podchron.exit.cause", "cause"},
	{"podchron.signal", "signal"},
	{"podchron.signal.disposition", "disposition"},
	{senderKey, "sender"},
	{"podchron.sigkill", "sigkill"},
	{"podchron.grace_period.seconds", "grace"},
	{"podchron.grace_period.overrun", "overrun"},
	{"podchron.restart.count", "restarts"},
	{"podchron.backoff.seconds", "backoff"},
	{"process.pid", "pid"},
	{"container.id", "id"},
	{"process.command_args", "args"},
	{"podchron.events_lost", "events_lost"},
	{"podchron.degraded", "degraded"},
	{"podchron.observed_from", "observed_from"},
}

// senderKey stands for the three podchron.signal.sender.* attributes,
// rendered together as kind:comm[pid].
const senderKey = "podchron.signal.sender"

// hidden are never rendered in text: they are in the block header.
var hidden = map[string]bool{
	"k8s.pod.uid": true, "k8s.pod.name": true, "k8s.namespace.name": true, "k8s.node.name": true,
	"podchron.signal.sender.kind": true, "podchron.signal.sender.comm": true, "podchron.signal.sender.pid": true,
}

func renderAttrs(attrs []correlate.Attr, name string, verbose bool) string {
	if len(attrs) == 0 {
		return ""
	}
	m := make(map[string]any, len(attrs))
	for _, a := range attrs {
		m[a.Key] = a.Value
	}
	var b strings.Builder
	shown := map[string]bool{}
	nameWords := strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '.' })
	inName := func(v string) bool {
		for _, w := range nameWords {
			if w == v {
				return true
			}
		}
		return false
	}
	for _, ka := range keyAttrs {
		if ka.key == senderKey {
			if s := sender(m); s != "" {
				b.WriteString(" sender=")
				b.WriteString(s)
			}
			continue
		}
		v, ok := m[ka.key]
		if !ok {
			continue
		}
		shown[ka.key] = true
		switch ka.key {
		case "podchron.cni.command", "podchron.cni.plugin", "podchron.signal":
			// Already in "cni.ADD bridge" or an event named SIGTERM.
			if sv, ok := v.(string); ok && inName(sv) {
				continue
			}
		case "podchron.sigkill", "podchron.grace_period.overrun":
			// Flags: shown when set.
			if bv, ok := v.(bool); ok {
				if bv {
					b.WriteString(" ")
					b.WriteString(ka.label)
				}
				continue
			}
		case "podchron.grace_period.seconds", "podchron.backoff.seconds":
			b.WriteString(" ")
			b.WriteString(ka.label)
			b.WriteString("=")
			b.WriteString(fmtValue(v))
			b.WriteString("s")
			continue
		case "container.id":
			if sv, ok := v.(string); ok && len(sv) > 12 {
				v = sv[:12]
			}
		case "process.command_args":
			v = truncate(fmtJoined(v), 60)
		}
		b.WriteString(" ")
		b.WriteString(ka.label)
		b.WriteString("=")
		b.WriteString(fmtValue(v))
	}
	if verbose {
		for _, a := range attrs {
			if shown[a.Key] || hidden[a.Key] {
				continue
			}
			b.WriteString(" ")
			b.WriteString(a.Key)
			b.WriteString("=")
			b.WriteString(fmtValue(a.Value))
		}
	}
	return b.String()
}

func sender(m map[string]any) string {
	kind, _ := m["podchron.signal.sender.kind"].(string)
	comm, _ := m["podchron.signal.sender.comm"].(string)
	pid, hasPid := m["podchron.signal.sender.pid"]
	if kind == "" && comm == "" && !hasPid {
		return ""
	}
	s := kind
	if comm != "" {
		if s != "" {
			s += ":"
		}
		s += comm
	}
	if hasPid {
		s += "[" + fmtValue(pid) + "]"
	}
	return quoteIfNeeded(s)
}

func fmtJoined(v any) string {
	if ss, ok := v.([]string); ok {
		return strings.Join(ss, " ")
	}
	return fmt.Sprint(v)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case string:
		return quoteIfNeeded(x)
	case []string:
		return quoteIfNeeded(strings.Join(x, ","))
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return quoteIfNeeded(fmt.Sprint(v))
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return s
}

// fmtOffset renders an offset from the pod's origin: +1.234s.
func fmtOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign = "-"
		d = -d
	}
	return sign + strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
}

// fmtDur renders a duration compactly: 850µs, 2.5ms, 125ms, 1.234s, 2m5.3s.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
	}
	return d.Round(100 * time.Millisecond).String()
}

func resAttr(res []correlate.Attr, k string) string {
	for _, a := range res {
		if a.Key == k {
			if s, ok := a.Value.(string); ok {
				return s
			}
			return fmt.Sprint(a.Value)
		}
	}
	return ""
}

func podName(res []correlate.Attr) string {
	ns, name := resAttr(res, "k8s.namespace.name"), resAttr(res, "k8s.pod.name")
	switch {
	case name == "":
		if uid := resAttr(res, "k8s.pod.uid"); uid != "" {
			return "uid " + uid
		}
		return "(unknown)"
	case ns == "":
		return name
	}
	return ns + "/" + name
}
