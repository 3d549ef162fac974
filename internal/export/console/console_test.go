package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func render(format Format, spans []span.Span) (*Printer, []byte) {
	var buf bytes.Buffer
	p := New(&buf, Config{Format: format})
	for _, s := range spans {
		p.Emit(s)
	}
	_ = p.Close()
	return p, buf.Bytes()
}

func TestGoldenText(t *testing.T) {
	p, out := render(FormatText, lifecycle())
	golden(t, "lifecycle.text.golden", out)
	st := p.Stats()
	if st.Pods != 2 || st.EvictedSpans != 0 || st.FlushedSpans != 0 || st.PendingSpans != 0 || st.PendingTraces != 0 {
		t.Errorf("stats %+v", st)
	}
	if st.Spans != uint64(len(lifecycle())) {
		t.Errorf("spans %d", st.Spans)
	}
}

func TestGoldenJSON(t *testing.T) {
	_, out := render(FormatJSON, lifecycle())
	golden(t, "lifecycle.json.golden", out)

	// One object per span, with the stable field names.
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(lifecycle()) {
		t.Fatalf("%d lines for %d spans", len(lines), len(lifecycle()))
	}
	want := []string{"attrs", "duration_ms", "end", "events", "name", "parent_id", "resource", "span_id", "start", "status", "trace_id"}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		delete(m, "status_message")
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sortStrings(keys)
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("line %d keys %v", i, keys)
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestTextBlocksAppearWhenPhasesEnd: nothing is printed for a child until
// its phase span arrives, and the phase block comes out at once then.
func TestTextBlocksAppearWhenPhasesEnd(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, Config{})
	spans := lifecycle()
	p.Emit(spans[0]) // pod.scheduling
	if buf.Len() != 0 {
		t.Fatalf("printed before the phase ended:\n%s", buf.String())
	}
	for _, s := range spans[1:] {
		p.Emit(s)
		if s.Name == names.SpanPodStartup {
			break
		}
	}
	out := buf.String()
	for _, want := range []string{names.SpanPodStartup, names.SpanPodScheduling, "cni.ADD bridge", names.SpanContainerInit, "probe.readiness"} {
		if !strings.Contains(out, want) {
			t.Errorf("startup block lacks %q:\n%s", want, out)
		}
	}
	if st := p.Stats(); st.PendingSpans != 0 {
		t.Errorf("%d spans still buffered after the startup phase", st.PendingSpans)
	}
}

func TestOrphansPrintedWithRoot(t *testing.T) {
	b := newPod("uid-orphan", "ns", "orphan-0", "n1")
	var buf bytes.Buffer
	p := New(&buf, Config{})
	// A child whose phase span never comes, then the root.
	p.Emit(b.span("x/child", "x", names.SpanContainerBackoff, 1, 11, span.StatusUnset,
		span.Float(names.BackoffSeconds, 10), span.String(names.K8sContainerName, "app")))
	if buf.Len() != 0 {
		t.Fatal("orphan printed early")
	}
	p.Emit(b.span("root", "", "pod", 0, 12, span.StatusOK))
	out := buf.String()
	if !strings.Contains(out, "spans without a finished phase") || !strings.Contains(out, "container.backoff container=app backoff=10s") {
		t.Errorf("orphan not printed at root:\n%s", out)
	}
	if !strings.Contains(out, "══ pod ns/orphan-0 · pod 12.000s (+0.000s → +12.000s) · ok · 0 phases, 2 spans") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestLateChildPrintedUnderItsPhase(t *testing.T) {
	b := newPod("uid-late", "ns", "late-0", "n1")
	var buf bytes.Buffer
	p := New(&buf, Config{})
	p.Emit(b.span("startup", "root", names.SpanPodStartup, 0, 5, span.StatusOK))
	p.Emit(b.span("startup/late", "startup", "probe.readiness", 4, 4.5, span.StatusOK))
	out := buf.String()
	if !strings.Contains(out, "late span of an earlier phase") || !strings.Contains(out, "    probe.readiness") {
		t.Errorf("late child:\n%s", out)
	}
	if st := p.Stats(); st.PendingSpans != 0 {
		t.Errorf("late child buffered: %+v", st)
	}
}

func TestEvictionBoundsBuffer(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, Config{MaxPendingSpans: 10, MaxTraces: 3})
	// 20 pods, 3 orphan children each, never finished.
	for i := range 20 {
		b := newPod(fmt.Sprint("uid-", i), "ns", fmt.Sprint("pod-", i), "n1")
		for j := range 3 {
			p.Emit(b.span(fmt.Sprint("c", j), "phase", names.SpanContainerStart, float64(j), float64(j)+1, span.StatusOK))
		}
		st := p.Stats()
		if st.PendingSpans > 10 || st.PendingTraces > 3 {
			t.Fatalf("after pod %d: %+v", i, st)
		}
	}
	st := p.Stats()
	if st.EvictedPods == 0 || st.EvictedSpans == 0 {
		t.Errorf("nothing evicted: %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st = p.Stats()
	if st.EvictedSpans+st.FlushedSpans != 60 {
		t.Errorf("evicted %d + flushed %d != 60 spans", st.EvictedSpans, st.FlushedSpans)
	}
	if got := strings.Count(buf.String(), names.SpanContainerStart); got != 60 {
		t.Errorf("%d span lines printed, want all 60", got)
	}
	if !strings.Contains(buf.String(), "evicted from the buffer") || !strings.Contains(buf.String(), "unfinished") {
		t.Errorf("output:\n%s", buf.String())
	}
}

// TestLongLivedPodKeepsOrigin: eviction for the span limit picks pods with
// buffered spans, not an idle long-lived pod whose startup already printed.
func TestLongLivedPodKeepsOrigin(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, Config{MaxPendingSpans: 2})
	old := newPod("uid-old", "ns", "old-0", "n1")
	p.Emit(old.span("startup", "root", names.SpanPodStartup, 0, 1, span.StatusOK))
	for i := range 5 {
		b := newPod(fmt.Sprint("uid-", i), "ns", fmt.Sprint("pod-", i), "n1")
		p.Emit(b.span("c", "phase", names.SpanContainerStart, 0, 1, span.StatusOK))
	}
	buf.Reset()
	p.Emit(old.span("termination", "root", names.SpanPodTermination, 100, 101, span.StatusOK))
	if !strings.Contains(buf.String(), "+100.000s") {
		t.Errorf("offset origin lost:\n%s", buf.String())
	}
}

func TestConcurrentEmit(t *testing.T) {
	for _, f := range []Format{FormatText, FormatJSON} {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			p := New(&buf, Config{Format: f})
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b := newPod(fmt.Sprint("uid-g", g), "ns", fmt.Sprint("g-", g), "n1")
					for i := range 50 {
						p.Emit(b.span(fmt.Sprint("c", i), "phase", names.SpanContainerStart, 0, 1, span.StatusOK))
					}
					p.Emit(b.span("phase", "root", names.SpanPodStartup, 0, 2, span.StatusOK))
					p.Emit(b.span("root", "", "pod", 0, 3, span.StatusOK))
				}()
			}
			wg.Wait()
			_ = p.Close()
			if got := strings.Count(buf.String(), names.SpanContainerStart); got != 400 {
				t.Errorf("%d span lines, want 400", got)
			}
			if f == FormatJSON {
				for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
					if !json.Valid([]byte(l)) {
						t.Fatalf("interleaved line: %q", l)
					}
				}
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteErrorsCounted(t *testing.T) {
	p := New(failWriter{}, Config{Format: FormatJSON})
	p.Emit(lifecycle()[0])
	if st := p.Stats(); st.WriteErrors != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatText, "text": FormatText, "JSON": FormatJSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil {
		t.Error("yaml accepted")
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{fmtDur(850e3), "850µs"},
		{fmtDur(2_500e3), "2.5ms"},
		{fmtDur(12_500e3), "13ms"},
		{fmtDur(1_234e6), "1.234s"},
		{fmtDur(125_340e6), "2m5.3s"},
		{fmtOffset(-100e6), "-0.100s"},
		{fmtValue("a b"), `"a b"`},
		{fmtValue([]string{"x", "y"}), "x,y"},
		{fmtValue(3.5), "3.5"},
		{fmtValue(int64(4)), "4"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q want %q", tc.got, tc.want)
		}
	}
}

func TestJSONOddValues(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, Config{Format: FormatJSON})
	s := lifecycle()[0]
	s.Attrs = []span.Attr{
		span.Float("nan", nan()), {Key: "weird", Value: struct{ A int }{1}}, span.Strings("empty"),
	}
	p.Emit(s)
	var m struct {
		Attrs map[string]any `json:"attrs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if m.Attrs["nan"] != "NaN" || m.Attrs["weird"] != "{1}" || !reflect.DeepEqual(m.Attrs["empty"], []any{}) {
		t.Errorf("attrs %#v", m.Attrs)
	}
}

func nan() float64 { var z float64; return z / z }
