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
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/podchron/podchron/internal/span"
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
	// span.SpanIDFor(t, "root").
	RootSpanID func(span.TraceID) span.SpanID
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

// Printer is a span.Sink that writes a timeline or JSON lines to w.
// Emit is safe for concurrent use.
type Printer struct {
	w   io.Writer
	cfg Config

	mu      sync.Mutex
	traces  map[span.TraceID]*traceState
	lru     *list.List // of *traceState, least recently active first
	pending int
	stats   Stats
	buf     strings.Builder
	jbuf    bytes.Buffer // one JSON line, before redact.JSONControls
	enc     *json.Encoder
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
		cfg.RootSpanID = span.RootSpanID
	}
	p := &Printer{
		w:      w,
		cfg:    cfg,
		traces: make(map[span.TraceID]*traceState),
		lru:    list.New(),
	}
	p.enc = json.NewEncoder(&p.jbuf)
	p.enc.SetEscapeHTML(false)
	return p
}

// Emit prints s, or buffers it until its phase is complete. A buffered span
// keeps s's slices: the caller must not modify them after Emit.
func (p *Printer) Emit(s span.Span) {
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

// ---- JSON ----

var _ span.Sink = (*Printer)(nil)
