package otlp

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dropEvents are the podchron.spans_dropped events of a received span, as
// reason -> count.
func dropEvents(s *tracepb.Span) map[string]int64 {
	out := map[string]int64{}
	for _, ev := range s.Events {
		if ev.Name != names.EventSpansDropped {
			continue
		}
		a := attrMap(ev.Attributes)
		r, _ := a[names.DropReason].(string)
		n, _ := a[names.DropCount].(int64)
		out[r] += n
	}
	return out
}

// rootOf is the root the collector received for trace t, or nil.
func rootOf(s *script, t span.TraceID) *tracepb.Span {
	for _, g := range s.sink.snapshot() {
		if len(g.Span.ParentSpanId) == 0 && hexOf(g.Span.TraceId) == t.String() {
			return g.Span
		}
	}
	return nil
}

// pending is how many traces have drops waiting for their root.
func (d *traceDrops) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.traces)
}

// A pod's spans lost before its root went (a batch the collector refused
// for good, a span too large to send) are told on that root: one
// podchron.spans_dropped event per reason with the count, so the trace
// says it lacks them (the node-wide podchron_spans_dropped_total names no
// pod). A pod whose root was lost with its batch leaves nothing waiting.
func TestRootTellsItsTracesDrops(t *testing.T) {
	refused := map[string]reply{
		"grpc":          {grpcErr: status.Error(codes.InvalidArgument, "test: bad")},
		"http/protobuf": {httpStatus: http.StatusBadRequest},
	}
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			// The first request is refused for good, the rest taken.
			s, e := startScript(t, p, func(call int) reply {
				if call == 1 {
					return refused[p]
				}
				return reply{}
			}, Config{BatchTimeout: time.Hour, MaxBatchBytes: 4096})
			a := podSpans("uid-a", "a-0")    // cni, startup, root
			gone := podSpans("uid-b", "b-0") // lost whole, root too
			huge := a[0]
			huge.SpanID = span.SpanIDFor(a[0].TraceID, "huge")
			huge.Attrs = []span.Attr{span.String("podchron.test.blob", strings.Repeat("x", 8192))}
			emitFlush(t, e, append([]span.Span{a[0], a[1]}, gone...)) // refused
			emitFlush(t, e, []span.Span{huge, a[2]})                  // too large; the root taken
			root := rootOf(s, a[2].TraceID)
			if root == nil {
				t.Fatalf("pod a's root not received; got %d spans", len(s.sink.snapshot()))
			}
			want := map[string]int64{ReasonExportFailed: 2, ReasonTooLarge: 1}
			if got := dropEvents(root); !maps.Equal(got, want) {
				t.Errorf("root's drop events %v, want %v", got, want)
			}
			for _, ev := range root.Events {
				if ev.Name == names.EventSpansDropped && (ev.TimeUnixNano < root.StartTimeUnixNano || ev.TimeUnixNano > root.EndTimeUnixNano) {
					t.Errorf("drop event at %d, outside its root %d..%d", ev.TimeUnixNano, root.StartTimeUnixNano, root.EndTimeUnixNano)
				}
			}
			if d := e.Drops(); d.ExportFailed != 5 || d.TooLarge != 1 {
				t.Errorf("drops %+v, want 5 export_failed (a's two, b's three), 1 too_large", d)
			}
			if n := e.traceDrops.pending(); n != 0 {
				t.Errorf("%d traces' drops still wait for a root (b's root went with its batch; a's told)", n)
			}
			// The caller's root keeps its own events: the drops went on a
			// copy.
			if len(a[2].Events) != 0 {
				t.Errorf("the emitted root was changed: %v", a[2].Events)
			}
		})
	}
}

// Spans a full queue refused (the collector slow: its first request held)
// are told on their trace's root too, when it goes later.
func TestRootTellsQueueFullDrops(t *testing.T) {
	gate := make(chan struct{})
	s, e := startScript(t, "grpc", func(call int) reply {
		if call == 1 {
			<-gate
		}
		return reply{}
	}, Config{QueueSize: 2, BatchSize: 1, BatchTimeout: time.Hour})
	a := podSpans("uid-q", "q-0")
	blocker := podSpans("uid-other", "other-0")[0]
	e.Emit(blocker)
	deadline := time.Now().Add(10 * time.Second)
	for len(s.calls()) == 0 {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("the first request never came")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The export loop is held in the first request: the queue takes two.
	e.Emit(a[0])
	e.Emit(a[1])
	for i := range 3 {
		x := a[0]
		x.SpanID = span.SpanIDFor(x.TraceID, fmt.Sprintf("extra/%d", i))
		e.Emit(x) // queue full
	}
	close(gate)
	emitFlush(t, e, nil) // the queue empties
	emitFlush(t, e, []span.Span{a[2]})
	root := rootOf(s, a[2].TraceID)
	if root == nil {
		t.Fatalf("the root not received; got %d spans", len(s.sink.snapshot()))
	}
	if got := dropEvents(root); !maps.Equal(got, map[string]int64{ReasonQueueFull: 3}) {
		t.Errorf("root's drop events %v, want queue_full 3", got)
	}
	if d := e.Drops(); d.QueueFull != 3 || d.Total() != 3 {
		t.Errorf("drops %+v, want 3 queue_full", d)
	}
}
