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
// emits them (by end, the root last) and returns the root, if among them.
func emit(p *console.Printer, spans []span.Span, seen map[span.SpanID]bool) *span.Span {
	var fresh []span.Span
	for _, s := range spans {
		if !seen[s.SpanID] {
			seen[s.SpanID] = true
			fresh = append(fresh, s)
		}
	}
	sort.SliceStable(fresh, func(a, b int) bool {
		ra, rb := isRoot(fresh[a]), isRoot(fresh[b])
		if ra != rb {
			return rb
		}
		if !fresh[a].End.Equal(fresh[b].End) {
			return fresh[a].End.Before(fresh[b].End)
		}
		return fresh[a].Start.Before(fresh[b].Start)
	})
	var root *span.Span
	for i := range fresh {
		p.Emit(fresh[i])
		if isRoot(fresh[i]) {
			root = &fresh[i]
		}
	}
	return root
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
