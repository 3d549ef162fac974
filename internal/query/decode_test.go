package query

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/podchron/podchron/internal/span"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)

// podSpans is a small pod lifecycle with every attribute type: a child, a
// phase with an error and an event, the root last.
func podSpans(uid, name, ns string) []span.Span {
	tid := span.TraceIDForPod(uid)
	root := span.RootSpanID(tid)
	startup := span.SpanIDFor(tid, "startup")
	cni := span.SpanIDFor(tid, "startup/cni/0")
	res := []span.Attr{
		span.String("k8s.pod.uid", uid), span.String("k8s.pod.name", name),
		span.String("k8s.namespace.name", ns), span.String("k8s.node.name", "worker-1"),
	}
	return []span.Span{
		{
			TraceID: tid, SpanID: cni, Parent: startup, Name: "cni.ADD bridge",
			Start: t0.Add(100 * time.Millisecond), End: t0.Add(150*time.Millisecond + 7), Status: span.StatusOK,
			Attrs: []span.Attr{
				span.String("podchron.cni.plugin", "bridge"),
				span.Int("process.pid", 4242),
				span.Strings("process.command_args", "/opt/cni/bin/bridge", "--debug"),
				span.Float("podchron.test.ratio", 0.25),
				span.Bool("podchron.sigkill", false),
				span.Int("podchron.signals.throttled", 1130010),
			},
			Resource: res,
		},
		{
			TraceID: tid, SpanID: startup, Parent: root, Name: "pod.startup",
			Start: t0, End: t0.Add(2 * time.Second),
			Status: span.StatusError, StatusMessage: "postStart hook failed",
			Events: []span.SpanEvent{{Name: "signal", Time: t0.Add(time.Second),
				Attrs: []span.Attr{span.String("podchron.signal.name", "SIGTERM"), span.Int("podchron.signal.number", 15)}}},
			Resource: res,
		},
		{
			TraceID: tid, SpanID: root, Name: "pod", Start: t0, End: t0.Add(5 * time.Second),
			Attrs:    []span.Attr{span.String("podchron.verdict", "started in 2.0 s")},
			Resource: res,
		},
	}
}

// norm sorts attributes and drops the service resource, so spans compare
// whatever order a back end keeps them in.
func norm(ss []span.Span) []span.Span {
	out := make([]span.Span, 0, len(ss))
	for _, s := range ss {
		s.Attrs = sortAttrs(s.Attrs)
		s.Resource = sortAttrs(slices.DeleteFunc(slices.Clone(s.Resource), func(a span.Attr) bool {
			return strings.HasPrefix(a.Key, "service.") || strings.HasPrefix(a.Key, "telemetry.")
		}))
		s.Start, s.End = s.Start.UTC(), s.End.UTC()
		for i := range s.Events {
			s.Events[i].Time = s.Events[i].Time.UTC()
			s.Events[i].Attrs = sortAttrs(s.Events[i].Attrs)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func sortAttrs(as []span.Attr) []span.Attr {
	as = slices.Clone(as)
	sort.Slice(as, func(a, b int) bool { return as[a].Key < as[b].Key })
	return as
}

func sameSpans(t *testing.T, got, want []span.Span) {
	t.Helper()
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("spans differ:\n got %+v\nwant %+v", g, w)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// toTraces encodes spans as pdata (the test's own encoder, to build what a
// back end answers with).
func toTraces(ss []span.Span) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, s := range ss {
		rs := td.ResourceSpans().AppendEmpty()
		putAttrs(rs.Resource().Attributes(), s.Resource)
		p := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		p.SetTraceID(pcommon.TraceID(s.TraceID))
		p.SetSpanID(pcommon.SpanID(s.SpanID))
		p.SetParentSpanID(pcommon.SpanID(s.Parent))
		p.SetName(s.Name)
		p.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
		p.SetEndTimestamp(pcommon.NewTimestampFromTime(s.End))
		p.Status().SetCode(map[span.Status]ptrace.StatusCode{span.StatusOK: ptrace.StatusCodeOk, span.StatusError: ptrace.StatusCodeError}[s.Status])
		p.Status().SetMessage(s.StatusMessage)
		putAttrs(p.Attributes(), s.Attrs)
		for _, e := range s.Events {
			pe := p.Events().AppendEmpty()
			pe.SetName(e.Name)
			pe.SetTimestamp(pcommon.NewTimestampFromTime(e.Time))
			putAttrs(pe.Attributes(), e.Attrs)
		}
	}
	return td
}

func putAttrs(m pcommon.Map, as []span.Attr) {
	for _, a := range as {
		switch v := a.Value.(type) {
		case string:
			m.PutStr(a.Key, v)
		case int64:
			m.PutInt(a.Key, v)
		case float64:
			m.PutDouble(a.Key, v)
		case bool:
			m.PutBool(a.Key, v)
		case []string:
			s := m.PutEmptySlice(a.Key)
			for _, x := range v {
				s.AppendEmpty().SetStr(x)
			}
		}
	}
}

// base64JSON renders spans as the protobuf JSON mapping does: IDs in
// base64, enums by name.
func base64JSON(t *testing.T, ss []span.Span) []byte {
	t.Helper()
	var m ptrace.ProtoMarshaler
	b, err := m.MarshalTraces(toTraces(ss))
	if err != nil {
		t.Fatal(err)
	}
	var td tracepb.TracesData
	if err := proto.Unmarshal(b, &td); err != nil {
		t.Fatal(err)
	}
	out, err := protojson.Marshal(&td)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecodeHexAndBase64IDs(t *testing.T) {
	want := podSpans("uid-1", "web-0", "shop")
	var m ptrace.JSONMarshaler
	hexJSON, err := m.MarshalTraces(toTraces(want))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hexJSON), want[0].TraceID.String()) {
		t.Fatalf("OTLP JSON without the hex trace ID: %s", hexJSON)
	}
	b64 := base64JSON(t, want)
	if strings.Contains(string(b64), want[0].TraceID.String()) {
		t.Fatalf("protobuf JSON with a hex trace ID: %s", b64)
	}
	for name, data := range map[string][]byte{"hex": hexJSON, "base64": b64} {
		got, err := DecodeOTLP(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameSpans(t, got, want)
	}
	if _, err := DecodeOTLP([]byte(`{"resourceSpans": [`)); err == nil {
		t.Fatal("truncated JSON decoded")
	}
}

// TestTempoTraceByID serves what Tempo's /api/v2/traces/{id} answers (the
// trace under "trace", IDs in base64): no Tempo binary here to run.
func TestTempoTraceByID(t *testing.T) {
	want := podSpans("uid-1", "web-0", "shop")
	body := fmt.Sprintf(`{"trace": %s, "status": "COMPLETE"}`, base64JSON(t, want))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != want[0].TraceID.String() {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	})
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		if !strings.Contains(q, `.k8s.pod.name = "web-0"`) || !strings.Contains(q, `resource.service.name = "podchron"`) {
			_, _ = w.Write([]byte(`{"traces": []}`))
			return
		}
		fmt.Fprintf(w, `{"traces": [{"traceID": %q}]}`, want[0].TraceID)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := New(Tempo, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Trace(context.Background(), want[0].TraceID)
	if err != nil {
		t.Fatal(err)
	}
	sameSpans(t, got, want)
	if _, err := c.Trace(context.Background(), span.TraceIDForPod("other")); !errors.Is(err, ErrNoTrace) {
		t.Fatalf("unknown trace: %v, want ErrNoTrace", err)
	}
	found, err := c.Search(context.Background(), Search{Attrs: map[string]string{"k8s.pod.name": "web-0"}, Since: t0})
	if err != nil || len(found) != 1 || found[0].ID != want[0].TraceID {
		t.Fatalf("search: %v, %v", found, err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, u := range []string{"", "localhost:16686", "ftp://x", "http://"} {
		if _, err := New(Jaeger, u, nil); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := New("zipkin", "http://x", nil); err == nil {
		t.Error("New(zipkin) accepted")
	}
	if _, err := ParseTraceID("xyz"); err == nil {
		t.Error("ParseTraceID(xyz) accepted")
	}
}
