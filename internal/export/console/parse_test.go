package console

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/correlate"
)

// ParseJSON reads back what the JSON printer writes: every documented
// attribute type, events, resource and parent.
func TestParseJSONRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC)
	want := correlate.Span{
		TraceID: correlate.TraceIDForPod("uid-1"), SpanID: correlate.SpanIDFor(correlate.TraceIDForPod("uid-1"), "run"),
		Parent: correlate.SpanIDFor(correlate.TraceIDForPod("uid-1"), "root"),
		Name:   names.SpanContainerRun, Start: t0, End: t0.Add(1500 * time.Millisecond),
		Status: correlate.StatusError, StatusMessage: "oom_killed",
		Attrs: []correlate.Attr{correlate.Float("a.float", 1.5), correlate.Int("b.int", 42), correlate.Bool("c.bool", true),
			correlate.String("d.string", "x"), correlate.Strings("e.strings", "sh", "-c", "true")},
		Events:   []correlate.SpanEvent{{Name: names.EventOOMKill, Time: t0.Add(time.Second), Attrs: []correlate.Attr{correlate.Int("pid", 7)}}},
		Resource: []correlate.Attr{correlate.String(names.K8sPodUID, "uid-1")},
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
