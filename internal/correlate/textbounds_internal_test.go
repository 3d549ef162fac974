package correlate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// Each cap on the text a span carries, with the exact text kept and the
// exact count: a multi-byte character at a cap is dropped whole, the
// counts of what was cut sum on the span, and ordinary text is untouched.
func TestBoundTextCaps(t *testing.T) {
	// 1023 bytes then "é" (2 bytes) straddling the 1 KiB cap.
	msg := strings.Repeat("m", 1023) + "é" + strings.Repeat("z", 100)
	reason := strings.Repeat("r", 127) + "€" // € at 127..130
	label := strings.Repeat("l", 255) + "😀"  // 😀 at 255..259
	status := strings.Repeat("s", 1100)
	args := []string{strings.Repeat("a", 4000), strings.Repeat("b", 200), "c"}
	attrs := []span.Attr{span.String(names.K8sPodName, strings.Repeat("p", 2000)), span.String(names.Message, "ordinary")}
	ev := span.SpanEvent{Name: "k8s.event.X", Attrs: []span.Attr{
		span.String(names.K8sEventReason, reason), span.String(names.Message, msg), span.Int(names.TextTruncatedBytes, 5)}}
	plain := span.SpanEvent{Name: "plain", Attrs: []span.Attr{span.String(names.Message, "fine")}}
	s := span.Span{Name: "x", StatusMessage: status,
		Attrs:    append(attrs, span.Strings(names.ProcessCommandArgs, args...)),
		Resource: []span.Attr{span.String(names.K8sPodLabelPrefix+"team", label)},
		Events:   []span.SpanEvent{plain, ev}}
	orig := ev.Attrs[1].Value
	boundText(&s)

	wantEvent := []span.Attr{
		span.String(names.K8sEventReason, strings.Repeat("r", 127)),
		span.String(names.Message, strings.Repeat("m", 1023)),
		span.Int(names.TextTruncatedBytes, 5+3+(2+100)),
	}
	if !reflect.DeepEqual(s.Events[1].Attrs, wantEvent) {
		t.Errorf("event attrs %v", s.Events[1].Attrs)
	}
	if !reflect.DeepEqual(s.Events[0], plain) {
		t.Errorf("ordinary event changed: %v", s.Events[0])
	}
	if ev.Attrs[1].Value != orig {
		t.Error("the model's own event was changed in place")
	}
	if s.StatusMessage != strings.Repeat("s", 1024) {
		t.Errorf("status message %d bytes, want 1024", len(s.StatusMessage))
	}
	if got := s.Resource[0].Value; got != strings.Repeat("l", 255) {
		t.Errorf("label value %q", got)
	}
	wantArgs := []string{strings.Repeat("a", 4000), strings.Repeat("b", 96)}
	if got := s.Attr(names.ProcessCommandArgs); !reflect.DeepEqual(got, wantArgs) {
		t.Errorf("argv %d args", len(got.([]string)))
	}
	if s.Attr(names.K8sPodName) != strings.Repeat("p", 2000) || s.Attr(names.Message) != "ordinary" {
		t.Error("text without a cap was cut")
	}
	want := int64(5+3+102) + 76 + 4 + (104 + 1) // events, status, label, argv
	if got := s.Attr(names.TextTruncatedBytes); got != want {
		t.Errorf("span counts %v bytes cut, want %d", got, want)
	}
}

// A span with nothing over a cap is left as it is, without a count.
func TestBoundTextOrdinary(t *testing.T) {
	s := span.Span{Name: "x", StatusMessage: "ok", Attrs: []span.Attr{span.String(names.Message, "hello")},
		Events: []span.SpanEvent{{Name: "e", Attrs: []span.Attr{span.String(names.Message, "é€😀")}}}}
	want := s
	boundText(&s)
	boundSize(&s)
	if !reflect.DeepEqual(s, want) {
		t.Errorf("ordinary span changed: %+v", s)
	}
}

// A span over the byte cap loses its last events first, then its largest
// attributes but the identity ones, and counts both.
func TestBoundSize(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	s := span.Span{Name: "x", Attrs: []span.Attr{
		span.String(names.ContainerID, big), span.String(names.ExitCause, big), span.String("podchron.other", big)}}
	for i := range 10 {
		s.Events = append(s.Events, span.SpanEvent{Name: string(rune('a' + i)), Attrs: []span.Attr{span.String("k", big)}})
	}
	boundSize(&s)
	if n := spanSize(&s); n > maxSpanBytes {
		t.Errorf("span is %d bytes after the cap", n)
	}
	if len(s.Events) != 0 || s.Attr(names.SpanEventsDropped) != int64(10) {
		t.Errorf("%d events kept, %v dropped", len(s.Events), s.Attr(names.SpanEventsDropped))
	}
	if s.Attr("podchron.other") != nil || s.Attr(names.ContainerID) == nil || s.Attr(names.ExitCause) == nil {
		t.Errorf("attributes kept: %v", keys(s.Attrs))
	}
	if n, _ := s.Attr(names.SpanTruncatedBytes).(int64); n < 11*(100<<10) {
		t.Errorf("%d bytes counted as dropped", n)
	}

	s = span.Span{Name: "y"}
	for i := range 10 {
		s.Events = append(s.Events, span.SpanEvent{Name: string(rune('a' + i)), Attrs: []span.Attr{span.String("k", big)}})
	}
	boundSize(&s)
	if len(s.Events) != 2 || s.Events[0].Name != "a" || s.Events[1].Name != "b" || s.Attr(names.SpanEventsDropped) != int64(8) {
		t.Errorf("kept %d events, %v dropped; want the first 2", len(s.Events), s.Attr(names.SpanEventsDropped))
	}
}

func keys(attrs []span.Attr) []string {
	var out []string
	for _, a := range attrs {
		out = append(out, a.Key)
	}
	return out
}
