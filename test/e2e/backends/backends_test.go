package backends

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/query/jaegertest"
	"github.com/podchron/podchron/internal/span"
)

// TestJaegerPublicAPI starts the e2e's Jaeger and reads spans sent with
// podchron's exporter back through api/v3, as the scenarios do.
func TestJaegerPublicAPI(t *testing.T) {
	home, _ := os.UserHomeDir()
	bin := filepath.Join(home, ".cache", "podchron", "e2e", "bin", "jaeger")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no Jaeger v2 binary (%v): bash test/e2e/tools/build.sh jaeger", err)
	}
	p := jaegertest.FreePorts(t, 6)
	ctx := context.Background()
	j, err := StartJaeger(ctx, slog.Default(), bin, t.TempDir(), JaegerPorts{OTLPGRPC: p[0], OTLPHTTP: p[1], QueryHTTP: p[2], QueryGRPC: p[3], Health: p[4], Metrics: p[5]})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	tid := span.TraceIDForPod("uid-1")
	root, ph := span.RootSpanID(tid), span.SpanIDFor(tid, "startup")
	t0 := time.Now().Add(-time.Minute)
	res := []span.Attr{span.String("k8s.pod.name", "web-0"), span.String("k8s.namespace.name", "shop")}
	jaegertest.Export(t, j.OTLPGRPC, []span.Span{
		{TraceID: tid, SpanID: ph, Parent: root, Name: "pod.startup", Start: t0, End: t0.Add(time.Second),
			Status: span.StatusError, StatusMessage: "failed", Resource: res,
			Attrs:  []span.Attr{span.Int("podchron.signals.throttled", 1130010), span.Strings("process.command_args", "sh", "-c")},
			Events: []span.SpanEvent{{Name: "signal", Time: t0, Attrs: []span.Attr{span.Float("x", 1.5)}}}},
		{TraceID: tid, SpanID: root, Name: "pod", Start: t0, End: t0.Add(2 * time.Second), Resource: res},
	})
	var tr *Trace
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		tr, err = j.Trace(ctx, tid.String())
		if err == nil && len(tr.Spans) == 2 {
			break
		}
		if (err != nil && !errors.Is(err, ErrNoTrace)) || time.Now().After(deadline) {
			t.Fatalf("trace: %v %v", tr, err)
		}
	}
	st := tr.Named("pod.startup")[0]
	if st.ParentID != root.String() || !st.Error || st.Str("otel.status_description") != "failed" ||
		st.Str("podchron.signals.throttled") != "1130010" || st.Service != "podchron" ||
		st.Resource["k8s.pod.name"] != "web-0" || st.Events[0].Name != "signal" || st.Events[0].Fields["x"] != 1.5 {
		t.Fatalf("pod.startup read back as %+v\n%s", st, tr)
	}
	if _, ok := tr.Named("pod")[0].Tags["otel.status_code"]; ok {
		t.Fatalf("success with an otel.status_code: %s", tr)
	}
	ids, err := j.Search(ctx, "podchron", map[string]string{"k8s.pod.name": "web-0"})
	if err != nil || !slices.Equal(ids, []string{tid.String()}) {
		t.Fatalf("search: %v %v", ids, err)
	}
	if svcs, err := j.Services(ctx); err != nil || !slices.Contains(svcs, "podchron") {
		t.Fatalf("services: %v %v", svcs, err)
	}
}

// TestPrometheusClient starts Debian's Prometheus with podchron's rules
// and reads it through client_golang's API client.
func TestPrometheusClient(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("no prometheus binary (apt-get install prometheus)")
	}
	p := jaegertest.FreePorts(t, 2)
	ctx := context.Background()
	pr, err := StartPrometheus(ctx, slog.Default(), t.TempDir(), PrometheusConfig{Port: p[0],
		Targets: []string{"127.0.0.1:" + itoa(p[0])}, RuleFiles: []string{"../../../deploy/rules/podchron.rules.yml"}, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	rules, err := pr.RuleNames(ctx)
	if err != nil || len(rules) == 0 {
		t.Fatalf("rules: %v %v", rules, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		s, err := pr.Query(ctx, `up{job="podchron"}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) == 1 && s[0].Value == 1 && s[0].Labels["job"] == "podchron" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("up: %v", s)
		}
	}
	if s, err := pr.Query(ctx, `scalar(vector(3))`); err != nil || len(s) != 1 || s[0].Value != 3 {
		t.Fatalf("scalar: %v %v", s, err)
	}
	if ts, err := pr.Targets(ctx); err != nil || len(ts) != 1 || ts[0].Health != "up" {
		t.Fatalf("targets: %+v %v", ts, err)
	}
	if _, err := pr.Alerts(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Query(ctx, `up{`); err == nil {
		t.Fatal("a bad query answered")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
