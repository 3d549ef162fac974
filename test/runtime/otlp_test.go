package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/export/otlp"
	"github.com/podchron/podchron/test/harness/containerd"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestOTLPToCollector sends a real pod's trace over OTLP/gRPC, configured
// only by OTEL_* variables, to a real OpenTelemetry Collector, and checks
// what the collector received. PODCHRON_OTELCOL names the collector binary
// (test/otlp/build-collector.sh builds one; CI sets it).
func TestOTLPToCollector(t *testing.T) {
	bin := os.Getenv("PODCHRON_OTELCOL")
	if bin == "" {
		t.Skip("PODCHRON_OTELCOL not set: build a collector with test/otlp/build-collector.sh")
	}
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "otelcol.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
`, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	col := exec.Command(bin, "--config", cfg)
	col.Stdout, col.Stderr = &out, &out
	if err := col.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = col.Process.Kill(); _ = col.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "Everything is ready") {
		if time.Now().After(deadline) {
			t.Fatalf("collector not ready:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fmt.Sprintf("http://127.0.0.1:%d", port))
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_SERVICE_NAME", "podchron-test")
	if !otlp.Configured() {
		t.Fatal("OTEL_EXPORTER_OTLP_ENDPOINT set but not seen")
	}
	exp, err := otlp.New(context.Background(), otlp.Config{NodeName: "test-node", BatchTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, containerd.Runtime{}, "", exp) // the default runtime ($PODCHRON_OCI_RUNTIME, else Debian's runc)
	pod, _ := e.gracefulPod(t, "exported")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exp.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	want := e.spans.trace(pod.UID)
	traceID := span.TraceIDForPod(pod.UID).String()
	deadline = time.Now().Add(15 * time.Second)
	for {
		got := out.String()
		missing := []string{}
		for _, s := range want {
			if !strings.Contains(got, "ID             : "+s.SpanID.String()) {
				missing = append(missing, s.Name+" "+s.SpanID.String())
			}
		}
		if len(missing) == 0 && strings.Contains(got, "Trace ID       : "+traceID) &&
			strings.Contains(got, "k8s.pod.uid: Str("+pod.UID+")") && strings.Contains(got, "service.name: Str(podchron-test)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector did not receive %d spans of trace %s: missing %v\n%s", len(missing), traceID, missing, tail(got, 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	exported, dropped, _ := exp.Stats()
	if exported < uint64(len(want)) || dropped != 0 {
		t.Errorf("exporter: exported %d dropped %d, want %d and 0", exported, dropped, len(want))
	}
	t.Logf("collector received all %d spans of trace %s", len(want), traceID)
	_ = exp.Shutdown(ctx)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
