// The text rendering: blocks, tree lines, the attributes worth a column.

package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/redact"
)

func (p *Printer) header(ts *traceState, what string) {
	b := &p.buf
	b.WriteString("── pod ")
	b.WriteString(podName(ts.res))
	if what != "" {
		b.WriteString(" · ")
		b.WriteString(redact.Printable(what))
	}
	if n := resAttr(ts.res, names.K8sNodeName); n != "" {
		b.WriteString(" · node ")
		b.WriteString(redact.Printable(n))
	}
	b.WriteString(" · trace ")
	b.WriteString(ts.id.String())
	if !ts.base.IsZero() {
		b.WriteString(" · t0 ")
		b.WriteString(ts.base.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
	b.WriteByte('\n')
}

func (p *Printer) printBlock(ts *traceState, top span.Span, depth int, note string) {
	ts.setBase(top)
	tree := p.take(ts, top.SpanID)
	what := top.Name
	if note != "" {
		what += " (" + note + ")"
	}
	p.header(ts, what)
	p.printTree(ts, top, depth, tree)
}

func (p *Printer) printTree(ts *traceState, s span.Span, depth int, tree map[span.SpanID][]span.Span) {
	p.line(ts, &s, depth)
	ts.printed[s.SpanID] = depth
	for _, c := range tree[s.SpanID] {
		p.printTree(ts, c, depth+1, tree)
	}
}

// printOrphans prints buffered spans whose phase never came: every span
// whose parent is not buffered starts a tree.
func (p *Printer) printOrphans(ts *traceState, why string) {
	var tops []span.Span
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
		rest := make([]span.Span, 0, len(ts.pending))
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
func (p *Printer) finish(ts *traceState, root span.Span) {
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
	b.WriteString(redact.Printable(root.Name))
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

func statusWord(s span.Status) string {
	switch s {
	case span.StatusOK:
		return "ok"
	case span.StatusError:
		return "ERROR"
	}
	return "unset"
}

func statusCol(s span.Status) string {
	switch s {
	case span.StatusOK:
		return "ok"
	case span.StatusError:
		return "ERR"
	}
	return ""
}

// line prints one span: offset, duration, status, indented name, key
// attributes; then its events.
func (p *Printer) line(ts *traceState, s *span.Span, depth int) {
	b := &p.buf
	fmt.Fprintf(b, "  %9s %9s  %-3s  %s%s", fmtOffset(s.Start.Sub(ts.base)), fmtDur(s.Duration()),
		statusCol(s.Status), strings.Repeat("  ", depth), redact.Printable(s.Name))
	b.WriteString(p.attrText(s))
	if s.Status == span.StatusError && s.StatusMessage != "" {
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

func (p *Printer) eventLine(ts *traceState, ev *span.SpanEvent, depth int) {
	b := &p.buf
	fmt.Fprintf(b, "  %9s %9s  %-3s  %s• %s", fmtOffset(ev.Time.Sub(ts.base)), "", "",
		strings.Repeat("  ", depth), redact.Printable(ev.Name))
	b.WriteString(renderAttrs(ev.Attrs, ev.Name, p.cfg.Verbose))
	b.WriteByte('\n')
}

func (p *Printer) attrText(s *span.Span) string {
	return renderAttrs(s.Attrs, s.Name, p.cfg.Verbose)
}

// keyAttrs are the attributes the text timeline shows, in this order, with
// their short labels.
var keyAttrs = []struct{ key, label string }{
	{names.K8sContainerName, "container"},
	{names.ProbeType, "probe"},
	{names.ProbeResult, "result"},
	{names.CNICommand, "cmd"},
	{names.CNIPlugin, "plugin"},
	{names.ProcessExitCode, "exit"},
	{names.ExitCause, "cause"},
	{names.SignalName, "signal"},
	{names.SignalDisposition, "disposition"},
	{senderKey, "sender"},
	{names.Sigkill, "sigkill"},
	{names.GracePeriodSeconds, "grace"},
	{names.GracePeriodOverrun, "overrun"},
	{names.K8sContainerRestartCount, "restarts"},
	{names.BackoffSeconds, "backoff"},
	{names.ProcessPID, "pid"},
	{names.ContainerID, "id"},
	{names.ProcessCommandArgs, "args"},
	{names.EventsLost, "events_lost"},
	{names.Degraded, "degraded"},
	{names.ObservedFrom, "observed_from"},
}

// senderKey stands for the three podchron.signal.sender.* attributes,
// rendered together as kind:comm[pid].
const senderKey = names.SignalSender

// hidden are never rendered in text: they are in the block header.
var hidden = map[string]bool{
	names.K8sPodUID: true, names.K8sPodName: true, names.K8sNamespaceName: true, names.K8sNodeName: true,
	names.SignalSenderKind: true, names.SignalSenderComm: true, names.SignalSenderPID: true,
}

func renderAttrs(attrs []span.Attr, name string, verbose bool) string {
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
		case names.CNICommand, names.CNIPlugin, names.SignalName:
			// Already in "cni.ADD bridge" or an event named SIGTERM.
			if sv, ok := v.(string); ok && inName(sv) {
				continue
			}
		case names.Sigkill, names.GracePeriodOverrun:
			// Flags: shown when set.
			if bv, ok := v.(bool); ok {
				if bv {
					b.WriteString(" ")
					b.WriteString(ka.label)
				}
				continue
			}
		case names.GracePeriodSeconds, names.BackoffSeconds:
			b.WriteString(" ")
			b.WriteString(ka.label)
			b.WriteString("=")
			b.WriteString(fmtValue(v))
			b.WriteString("s")
			continue
		case names.ContainerID:
			if sv, ok := v.(string); ok && len(sv) > 12 {
				v = sv[:12]
			}
		case names.ProcessCommandArgs:
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
			b.WriteString(redact.Printable(a.Key))
			b.WriteString("=")
			b.WriteString(fmtValue(a.Value))
		}
	}
	return b.String()
}

func sender(m map[string]any) string {
	kind, _ := m[names.SignalSenderKind].(string)
	comm, _ := m[names.SignalSenderComm].(string)
	pid, hasPid := m[names.SignalSenderPID]
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

// quoteIfNeeded renders a value: quoted (strconv.Quote, which escapes what
// is not printable) when it is empty or holds a space, a quote or '=';
// else as it is, what is not printable escaped (redact.Printable).
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return redact.Printable(s)
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

func resAttr(res []span.Attr, k string) string {
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

// podName is the pod's namespace/name (or uid) from the resource, escaped
// for the terminal.
func podName(res []span.Attr) string { return redact.Printable(rawPodName(res)) }

func rawPodName(res []span.Attr) string {
	ns, name := resAttr(res, names.K8sNamespaceName), resAttr(res, names.K8sPodName)
	switch {
	case name == "":
		if uid := resAttr(res, names.K8sPodUID); uid != "" {
			return "uid " + uid
		}
		return "(unknown)"
	case ns == "":
		return name
	}
	return ns + "/" + name
}
