// Package console is podchron's built-in output when no OTLP collector is
// configured: a readable per-pod timeline ("waterfall") in text, or one JSON
// object per span.
//
// The correlator emits each span once, when its phase ends: children before
// their parents, the pod's root span last. In text mode the printer buffers
// a pod's spans and prints a block when a phase span (a span whose parent is
// the pod's root) arrives, with the phase's buffered descendants indented
// under it; when the root arrives it prints whatever is left and a summary
// line. Buffering is bounded: the least recently active pod is evicted, its
// buffered spans printed as they are, when the limits are reached.
package console

import (
	"container/list"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/correlate"
)

// Format selects the output format.
type Format string

const (
	// FormatText prints per-pod timelines.
	FormatText Format = "text"
	// FormatJSON prints one JSON object per span, as it arrives.
	FormatJSON Format = "json"
)

// ParseFormat parses "text" (or "") and "json".
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "text":
		return FormatText, nil
	case "json":
		return FormatJSON, nil
	}
	return "", fmt.Errorf("unknown output format %q (want text or json)", s)
}

// Defaults for Config's zero fields.
const (
	DefaultMaxPendingSpans = 10000
	DefaultMaxTraces       = 4096
	DefaultRootKey         = "root"
)

// Config tunes a Printer. The zero value prints text with default limits.
type Config struct {
	Format Format
	// MaxPendingSpans bounds the spans buffered, over all pods, while they
	// wait for their phase span (default 10000).
	MaxPendingSpans int
	// MaxTraces bounds the pods the text printer keeps state for (default
	// 4096): buffered spans, the offset origin, printed phases.
	MaxTraces int
	// RootSpanID gives a trace's root span id, so that phase spans (the
	// root's children) are known before the root itself arrives. Default:
	// correlate.SpanIDFor(t, "root").
	RootSpanID func(correlate.TraceID) correlate.SpanID
	// Verbose renders every span attribute in text mode, not only the key
	// ones.
	Verbose bool
}

// Stats counts what a Printer did.
type Stats struct {
	Spans         uint64 // spans received
	Pods          uint64 // root spans (finished pods) printed
	EvictedPods   uint64 // pods evicted from the buffer before their root arrived
	EvictedSpans  uint64 // spans printed out of order because of eviction
	FlushedSpans  uint64 // spans of unfinished pods printed by Close
	WriteErrors   uint64 // failed writes
	PendingSpans  int    // spans buffered now
	PendingTraces int    // pods with state now
}

// Printer is a correlate.Sink that writes a timeline or JSON lines to w.
// Emit is safe for concurrent use.
type Printer struct {
	w   io.Writer
	cfg Config

	mu      sync.Mutex
	traces  map[correlate.TraceID]*traceState
	lru     *list.List // of *traceState, least recently active first
	pending int
	stats   Stats
	buf     strings.Builder
	enc     *json.Encoder
}

// traceState is what the text printer keeps for one pod.
type traceState struct {
	id      correlate.TraceID
	root    correlate.SpanID
	pending map[correlate.SpanID]correlate.Span
	printed map[correlate.SpanID]int // depth of printed spans
	base    time.Time                // offset origin, set at the first print
	res     []correlate.Attr
	phases  int
	spans   int
	elem    *list.Element
}

// New returns a Printer writing to w.
func New(w io.Writer, cfg Config) *Printer {
	if cfg.Format == "" {
		cfg.Format = FormatText
	}
	if cfg.MaxPendingSpans <= 0 {
		cfg.MaxPendingSpans = DefaultMaxPendingSpans
	}
	if cfg.MaxTraces <= 0 {
		cfg.MaxTraces = DefaultMaxTraces
	}
	if cfg.RootSpanID == nil {
		cfg.RootSpanID = func(t correlate.TraceID) correlate.SpanID {
			return correlate.SpanIDFor(t, DefaultRootKey)
		}
	}
	p := &Printer{
		w:      w,
		cfg:    cfg,
		traces: make(map[correlate.TraceID]*traceState),
		lru:    list.New(),
	}
	p.enc = json.NewEncoder(&p.buf)
	p.enc.SetEscapeHTML(false)
	return p
}

// Emit prints s, or buffers it until its phase is complete. A buffered span
// keeps s's slices: the caller must not modify them after Emit.
func (p *Printer) Emit(s correlate.Span) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Spans++
	if p.cfg.Format == FormatJSON {
		p.writeJSON(&s)
		p.flushBuf()
		return
	}
	p.emitText(s)
	p.flushBuf()
}

// Close prints the buffered spans of every pod whose root never arrived
// (oldest first) and forgets them. The Printer stays usable.
func (p *Printer) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.lru.Len() > 0 {
		ts := p.lru.Front().Value.(*traceState)
		p.stats.FlushedSpans += uint64(len(ts.pending))
		p.dropTrace(ts, "unfinished: the pod's root span never arrived")
	}
	p.flushBuf()
	return nil
}

// Stats returns the printer's counters.
func (p *Printer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.PendingSpans = p.pending
	st.PendingTraces = len(p.traces)
	return st
}

func (p *Printer) flushBuf() {
	if p.buf.Len() == 0 {
		return
	}
	if _, err := io.WriteString(p.w, p.buf.String()); err != nil {
		p.stats.WriteErrors++
	}
	p.buf.Reset()
}

// ---- text ----

func (p *Printer) state(s *correlate.Span) *traceState {
	ts, ok := p.traces[s.TraceID]
	if ok {
		p.lru.MoveToBack(ts.elem)
		if len(ts.res) == 0 && len(s.Resource) > 0 {
			ts.res = s.Resource
		}
		return ts
	}
	ts = &traceState{
		id:      s.TraceID,
		root:    p.cfg.RootSpanID(s.TraceID),
		pending: make(map[correlate.SpanID]correlate.Span),
		printed: make(map[correlate.SpanID]int),
		res:     s.Resource,
	}
	ts.elem = p.lru.PushBack(ts)
	p.traces[s.TraceID] = ts
	for len(p.traces) > p.cfg.MaxTraces {
		old := p.lru.Front().Value.(*traceState)
		if old == ts {
			break
		}
		p.evict(old)
	}
	return ts
}

func (p *Printer) emitText(s correlate.Span) {
	ts := p.state(&s)
	ts.spans++
	switch {
	case s.Parent.IsZero():
		p.finish(ts, s)
	case s.Parent == ts.root:
		ts.phases++
		p.printBlock(ts, s, 0, "")
	default:
		if d, ok := ts.printed[s.Parent]; ok {
			// Its parent is already printed: print it at once, under a
			// header saying so.
			p.printBlock(ts, s, d+1, "late span of an earlier phase")
			return
		}
		if _, dup := ts.pending[s.SpanID]; !dup {
			p.pending++
		}
		ts.pending[s.SpanID] = s
		for p.pending > p.cfg.MaxPendingSpans {
			old := p.oldestPending()
			if old == nil {
				break
			}
			p.evict(old)
		}
	}
}

// oldestPending is the least recently active pod with buffered spans.
func (p *Printer) oldestPending() *traceState {
	for e := p.lru.Front(); e != nil; e = e.Next() {
		if ts := e.Value.(*traceState); len(ts.pending) > 0 {
			return ts
		}
	}
	return nil
}

// evict prints a pod's buffered spans as they are and forgets the pod.
func (p *Printer) evict(ts *traceState) {
	p.stats.EvictedPods++
	p.stats.EvictedSpans += uint64(len(ts.pending))
	p.dropTrace(ts, fmt.Sprintf("evicted from the buffer (limits %d spans, %d pods)", p.cfg.MaxPendingSpans, p.cfg.MaxTraces))
}

func (p *Printer) dropTrace(ts *traceState, why string) {
	if len(ts.pending) > 0 {
		p.printOrphans(ts, why)
	}
	p.lru.Remove(ts.elem)
	delete(p.traces, ts.id)
}

// take removes s's buffered descendants from the buffer and returns them
// as a tree: children by parent, each list in display order.
func (p *Printer) take(ts *traceState, top correlate.SpanID) map[correlate.SpanID][]correlate.Span {
	children := map[correlate.SpanID][]correlate.Span{}
	for _, c := range ts.pending {
		children[c.Parent] = append(children[c.Parent], c)
	}
	tree := map[correlate.SpanID][]correlate.Span{}
	var walk func(id correlate.SpanID)
	walk = func(id correlate.SpanID) {
		kids := children[id]
		if len(kids) == 0 {
			return
		}
		sortSpans(kids)
		tree[id] = kids
		for _, k := range kids {
			delete(ts.pending, k.SpanID)
			p.pending--
			walk(k.SpanID)
		}
	}
	walk(top)
	return tree
}

func sortSpans(ss []correlate.Span) {
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if !a.End.Equal(b.End) {
			return a.End.Before(b.End)
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return string(a.SpanID[:]) < string(b.SpanID[:])
	})
}

// setBase fixes the pod's offset origin at the earliest start known at its
// first print.
func (ts *traceState) setBase(spans ...correlate.Span) {
	if !ts.base.IsZero() {
		return
	}
	var min time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (min.IsZero() || t.Before(min)) {
			min = t
		}
	}
	for _, s := range spans {
		consider(s.Start)
	}
	for _, s := range ts.pending {
		consider(s.Start)
	}
	ts.base = min
}

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

// ---- JSON ----

type jsonSpan struct {
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentID      string         `json:"parent_id"`
	Name          string         `json:"name"`
	Start         string         `json:"start"`
	End           string         `json:"end"`
	DurationMS    float64        `json:"duration_ms"`
	Status        string         `json:"status"`
	StatusMessage string         `json:"status_message,omitempty"`
	Attrs         map[string]any `json:"attrs"`
	Events        []jsonEvent    `json:"events"`
	Resource      map[string]any `json:"resource"`
}

type jsonEvent struct {
	Name  string         `json:"name"`
	Time  string         `json:"time"`
	Attrs map[string]any `json:"attrs"`
}

func (p *Printer) writeJSON(s *correlate.Span) {
	js := jsonSpan{
		TraceID:       s.TraceID.String(),
		SpanID:        s.SpanID.String(),
		Name:          s.Name,
		Start:         fmtTime(s.Start),
		End:           fmtTime(s.End),
		DurationMS:    float64(s.Duration()) / float64(time.Millisecond),
		Status:        s.Status.String(),
		StatusMessage: s.StatusMessage,
		Attrs:         jsonAttrs(s.Attrs),
		Events:        make([]jsonEvent, 0, len(s.Events)),
		Resource:      jsonAttrs(s.Resource),
	}
	if !s.Parent.IsZero() {
		js.ParentID = s.Parent.String()
	}
	for _, ev := range s.Events {
		js.Events = append(js.Events, jsonEvent{Name: ev.Name, Time: fmtTime(ev.Time), Attrs: jsonAttrs(ev.Attrs)})
	}
	if err := p.enc.Encode(js); err != nil {
		// Cannot happen with the normalized values; keep the line count.
		p.stats.WriteErrors++
	}
}

// fmtTime renders a JSON timestamp: RFC 3339, UTC, fixed nanosecond width
// (so that the strings sort as the times do).
func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

func jsonAttrs(as []correlate.Attr) map[string]any {
	m := make(map[string]any, len(as))
	for _, a := range as {
		m[a.Key] = jsonValue(a.Value)
	}
	return m
}

// jsonValue keeps the documented attribute types (string, int64, float64,
// bool, []string) and turns anything else into something encoding/json
// always accepts.
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, int, int32, uint32, uint64:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	case []string:
		if x == nil {
			return []string{}
		}
		return x
	case time.Time:
		return fmtTime(x)
	case time.Duration:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

var _ correlate.Sink = (*Printer)(nil)
