package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/podchron/podchron/internal/export/console"
	"github.com/podchron/podchron/internal/query"
	"github.com/podchron/podchron/internal/redact"
	"github.com/podchron/podchron/internal/span"
)

// verdictKey is the root span's verdict in plain words, set by the model.
const verdictKey = "podchron.verdict"

// show prints the pod's trace as it is now, then its verdict.
func (c *cli) show(ctx context.Context, t *target) error {
	spans := t.spans
	if spans == nil {
		var err error
		spans, err = c.q.Trace(ctx, t.id)
		if errors.Is(err, query.ErrNoTrace) {
			return c.noTrace(t)
		}
		if err != nil {
			return err
		}
	}
	p := c.printer()
	root := emit(p, spans, map[span.SpanID]bool{})
	_ = p.Close()
	c.verdict(root)
	return nil
}

// watch polls the back end and prints the pod's spans as they arrive,
// until the root span (the pod is gone) or ctx's end (ctrl-C).
func (c *cli) watch(ctx context.Context, t *target) error {
	p := c.printer()
	defer func() { _ = p.Close() }()
	seen := map[span.SpanID]bool{}
	tick := time.NewTicker(c.o.interval)
	defer tick.Stop()
	waiting := false
	for {
		spans, err := c.q.Trace(ctx, t.id)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, query.ErrNoTrace):
			if !waiting {
				fmt.Fprintf(c.errw, "kubectl-podchron: waiting for the trace of %s (trace %s) in %s at %s; ctrl-C to stop\n",
					t.desc, t.id, c.q.Kind(), c.q.URL())
				waiting = true
			}
		case err != nil:
			return err
		default:
			if root := emit(p, spans, seen); root != nil {
				_ = p.Close()
				c.verdict(root)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (c *cli) printer() *console.Printer {
	return console.New(c.out, console.Config{Format: c.format, Verbose: c.o.verbose})
}

// emit gives the printer the spans not seen yet in the order the tracer
// emits them — every span after its descendants, siblings by end, the root
// last — and returns the root, if among them.
func emit(p *console.Printer, spans []span.Span, seen map[span.SpanID]bool) *span.Span {
	fresh := map[span.SpanID]span.Span{}
	for _, s := range spans {
		if !seen[s.SpanID] {
			seen[s.SpanID] = true
			fresh[s.SpanID] = s
		}
	}
	children := map[span.SpanID][]span.Span{}
	var tops []span.Span
	for _, s := range fresh {
		if _, ok := fresh[s.Parent]; ok && s.Parent != s.SpanID {
			children[s.Parent] = append(children[s.Parent], s)
		} else {
			tops = append(tops, s)
		}
	}
	var root *span.Span
	var visit func(s span.Span)
	visit = func(s span.Span) {
		kids := children[s.SpanID]
		byEnd(kids)
		for _, c := range kids {
			visit(c)
		}
		p.Emit(s)
		if isRoot(s) {
			root = &s
		}
	}
	byEnd(tops)
	for _, s := range tops {
		visit(s)
	}
	return root
}

// byEnd sorts spans by end (then start), the root last.
func byEnd(ss []span.Span) {
	sort.SliceStable(ss, func(a, b int) bool {
		ra, rb := isRoot(ss[a]), isRoot(ss[b])
		if ra != rb {
			return rb
		}
		if !ss[a].End.Equal(ss[b].End) {
			return ss[a].End.Before(ss[b].End)
		}
		return ss[a].Start.Before(ss[b].Start)
	})
}

func isRoot(s span.Span) bool { return s.SpanID == span.RootSpanID(s.TraceID) }

// verdict prints the root span's verdict (text output only); without a
// root the pod is not finished.
func (c *cli) verdict(root *span.Span) {
	if c.format != console.FormatText {
		return
	}
	if root == nil {
		fmt.Fprintln(c.out, "(no root span yet: the pod is still running, or the tracer has not finished its trace; --watch follows it)")
		return
	}
	if v, ok := root.Attr(verdictKey).(string); ok && v != "" {
		fmt.Fprintf(c.out, "verdict: %s\n", redact.Printable(v))
	}
}
