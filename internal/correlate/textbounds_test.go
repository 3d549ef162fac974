package correlate_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// spanCap is the model's span byte cap (textbounds.go's maxSpanBytes).
const spanCap = 256 << 10

// encodedSize is an independent, generous estimate of a span's encoded
// size: every key and value as text.
func encodedSize(sp span.Span) int {
	size := len(sp.Name) + len(sp.StatusMessage)
	for _, attrs := range [][]span.Attr{sp.Attrs, sp.Resource} {
		for _, a := range attrs {
			size += len(a.Key) + len(fmt.Sprint(a.Value))
		}
	}
	for _, e := range sp.Events {
		size += len(e.Name) + 8
		for _, a := range e.Attrs {
			size += len(a.Key) + len(fmt.Sprint(a.Value))
		}
	}
	return size
}

// largeEvents sends n Events of size bytes each about the sim's pod, each
// a distinct object (as a tenant creating Events in its namespace makes).
func largeEvents(s *sim, n, size int) {
	for i := range n {
		// A new string each time: the Events are distinct objects.
		msg := strings.Repeat(string(rune('A'+i%26)), size)
		s.at(time.Millisecond)
		s.in(fact.Input{Event: &fact.K8sEvent{UID: fmt.Sprintf("big-%d", i), PodUID: s.uid, Namespace: "shop",
			Reason: "Tenant" + strings.Repeat("R", 300), Message: msg, FirstTime: s.now, LastTime: s.now, Count: 1}})
	}
}

// 300 Events of 1 MiB about one pod: every event on the root span is cut
// to the caps and says what was cut, the root span stays under the span
// cap, counts the events it dropped to get there and the text it cut.
func TestLargeEventsBounded(t *testing.T) {
	s := newSim(t)
	s.startup()
	before := heapNow()
	largeEvents(s, 300, 1<<20)
	// What the model keeps of them (no span is out yet): the cut text,
	// never the whole messages (a substring would pin them).
	if grew := int64(heapNow()) - int64(before); grew > 16<<20 {
		t.Errorf("300 Events of 1 MiB grew the heap by %d MiB", grew>>20)
	}
	s.c.Flush()
	root := s.one(names.SpanPod)
	if n := encodedSize(root); n > spanCap {
		t.Errorf("root span is %d bytes, want at most %d", n, spanCap)
	}
	var big, cutOnEvents int64
	for _, e := range root.Events {
		if !strings.HasPrefix(e.Name, names.K8sEventName("Tenant")) {
			continue
		}
		big++
		for _, a := range e.Attrs {
			switch a.Key {
			case names.Message:
				if v := a.Value.(string); len(v) != fact.MaxEventMessage {
					t.Errorf("event message is %d bytes, want %d", len(v), fact.MaxEventMessage)
				}
			case names.K8sEventReason:
				if v := a.Value.(string); len(v) != fact.MaxEventReason {
					t.Errorf("event reason is %d bytes, want %d", len(v), fact.MaxEventReason)
				}
			case names.TextTruncatedBytes:
				cutOnEvents += a.Value.(int64)
			}
		}
	}
	perEvent := int64(1<<20-fact.MaxEventMessage) + int64(len("Tenant")+300-fact.MaxEventReason)
	if big == 0 || cutOnEvents != big*perEvent {
		t.Errorf("%d large events kept, %d bytes counted as cut on them, want %d each", big, cutOnEvents, perEvent)
	}
	// The root counts the text cut from all its events, those it then
	// dropped to fit the span cap (all of them large ones: the last go
	// first) included.
	dropped, _ := root.Attr(names.SpanEventsDropped).(int64)
	if dropped == 0 || root.Attr(names.SpanTruncatedBytes) == nil {
		t.Errorf("root over the span cap: %d events dropped, %v bytes", dropped, root.Attr(names.SpanTruncatedBytes))
	}
	if got, _ := root.Attr(names.TextTruncatedBytes).(int64); got != (big+dropped)*perEvent {
		t.Errorf("root counts %d bytes of text cut, want %d (%d events kept, %d dropped)", got, (big+dropped)*perEvent, big, dropped)
	}
	if root.Events[0].Name != names.K8sEventName("Scheduled") {
		t.Errorf("the first event is %q, want the pod's first (kept when the last go)", root.Events[0].Name)
	}
	for _, k := range []string{names.K8sPodUID, names.K8sPodName, names.K8sNamespaceName} {
		if !hasAttr(root.Resource, k) {
			t.Errorf("root lost %s", k)
		}
	}
}

func hasAttr(attrs []span.Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// BenchmarkLargeEvents: 300 Events of 1 MiB about one pod (the fault
// suite's figure); the model's heap must grow by well under 16 MiB
// (the DaemonSet's limit is 128 Mi), reported as heap-growth-KiB.
func BenchmarkLargeEvents(b *testing.B) {
	for b.Loop() {
		s := newSim(&testing.T{})
		s.startup()
		before := heapNow()
		largeEvents(s, 300, 1<<20)
		after := heapNow()
		b.ReportMetric(float64(int64(after)-int64(before))/1024, "heap-growth-KiB")
		runtime.KeepAlive(s)
	}
}
