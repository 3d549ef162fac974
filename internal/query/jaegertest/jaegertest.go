// Package jaegertest runs a real Jaeger v2 (the binary the e2e builds,
// test/e2e/tools/build.sh) with in-memory storage for tests, and sends it
// spans with podchron's own OTLP exporter.
package jaegertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	otlptracegrpc "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/podchron/podchron/internal/export/otlp"
	"github.com/podchron/podchron/internal/span"
)

// jaegerBin is the Jaeger v2 binary the e2e builds
// (test/e2e/tools/build.sh), or $PODCHRON_JAEGER.
func jaegerBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("PODCHRON_JAEGER")
	if bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, ".cache", "podchron", "e2e", "bin", "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no Jaeger v2 binary (%v): build it with `bash test/e2e/tools/build.sh jaeger` or set PODCHRON_JAEGER", err)
	}
	return bin
}

// FreePorts returns n loopback ports free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry:
    metrics:
      level: basic
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %[5]d}}}
extensions:
  jaeger_query:
    enable_tracing: false
    storage: {traces: mem}
    http: {endpoint: "127.0.0.1:%[2]d"}
    grpc: {endpoint: "127.0.0.1:%[3]d"}
  jaeger_storage:
    backends:
      mem: {memory: {max_traces: 1000}}
receivers:
  otlp:
    protocols:
      grpc: {endpoint: "127.0.0.1:%[1]d"}
      http: {endpoint: "127.0.0.1:%[4]d"}
processors:
  batch: {timeout: 100ms}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`

// Start runs a real Jaeger v2 with in-memory storage; it returns the
// OTLP/gRPC address and the query API's base URL. The process is killed
// when the test ends. The test skips when the binary is absent.
func Start(t testing.TB) (otlpAddr, queryURL string) {
	t.Helper()
	bin := jaegerBin(t)
	p := FreePorts(t, 5)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, p[0], p[1], p[2], p[3], p[4]), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
	queryURL = fmt.Sprintf("http://127.0.0.1:%d", p[1])
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(queryURL + "/api/v3/services")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "jaeger.log"))
			t.Fatalf("jaeger not ready at %s: %v\n%s", queryURL, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("127.0.0.1:%d", p[0]), queryURL
}

// Export sends spans to addr with podchron's own OTLP exporter, as
// service "podchron".
func Export(t testing.TB, addr string, spans []span.Span) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := otlptracegrpc.NewClient(otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure())
	res := resource.NewSchemaless(semconv.ServiceName("podchron"))
	e, err := otlp.New(ctx, otlp.Config{Client: client, Resource: res, BatchTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spans {
		e.Emit(s)
	}
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if exported, dropped, _ := e.Stats(); exported != uint64(len(spans)) || dropped != 0 {
		t.Fatalf("exported %d, dropped %d of %d spans", exported, dropped, len(spans))
	}
}
