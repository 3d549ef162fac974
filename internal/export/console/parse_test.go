package console

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// ParseJSON reads back what the JSON printer writes: every documented
// attribute type, events, resource and parent.
func TestParseJSONRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC)
	want := span.Span{
		TraceID: span.TraceIDForPod("uid-1"), SpanID: span.SpanIDFor(span.TraceIDForPod("uid-1"), "run"),
		Parent: span.SpanIDFor(span.TraceIDForPod("uid-1"), "root"),
		Name:   names.SpanContainerRun, Start: t0, End: t0.Add(1500 * time.Millisecond),
		Status: span.StatusError, StatusMessage: "oom_killed",
		Attrs: []span.Attr{span.Float("a.float", 1.5), span.Int("b.int", 42), span.Bool("c.bool", true),
			span.String("d.string", "x"), span.Strings("e.strings", "sh", "-c", "true")},
		Events:   []span.SpanEvent{{Name: names.EventOOMKill, Time: t0.Add(time.Second), Attrs: []span.Attr{span.Int("pid", 7)}}},
		Resource: []span.Attr{span.String(names.K8sPodUID, "uid-1")},
	}
	var out strings.Builder
	p := New(&out, Config{Format: FormatJSON})
	p.Emit(want)
	p.Close()
	got, err := ParseJSON([]byte(strings.TrimSpace(out.String())))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if _, err := ParseJSON([]byte(`{"trace_id":"zz"}`)); err == nil {
		t.Error("a bad trace id parsed")
	}
}
