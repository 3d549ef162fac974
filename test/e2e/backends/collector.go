package backends

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/podchron/podchron/test/e2e/proc"
)

// Collector is a running OpenTelemetry Collector (the e2e's build:
// test/e2e/tools/otelcol) between the tracer and the trace back ends, as
// users run podchron: OTLP/gRPC in, one OTLP/gRPC exporter per back end
// (a fan-out: every span goes to each).
type Collector struct {
	p *proc.Process
	// OTLPGRPC is the OTLP/gRPC receiver's host:port (the tracer's
	// endpoint).
	OTLPGRPC string
	// How it was started, for Up.
	log           *slog.Logger
	bin, dir, cfg string
	metricsURL    string
	restarts      int
}

// CollectorPorts are the loopback ports the collector binds.
type CollectorPorts struct {
	OTLPGRPC, Metrics int
}

// DefaultCollectorPorts keep clear of Jaeger's (DefaultJaegerPorts).
var DefaultCollectorPorts = CollectorPorts{OTLPGRPC: 24317, Metrics: 18889}

// StartCollector starts bin (the e2e's otelcol) with a traces pipeline from
// its OTLP receiver to an OTLP/gRPC exporter for each of backends (name →
// host:port of the back end's OTLP/gRPC receiver, plaintext).
//
// No batch processor: the tracer batches already (100 ms), and each back end
// batches what it stores; a second wait here would only add latency
// (scenario 27 asserts the phase end → span readable time).
func StartCollector(ctx context.Context, log *slog.Logger, bin, dir string, ports CollectorPorts, backends map[string]string) (*Collector, error) {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	var exporters, ids strings.Builder
	for i, n := range names {
		fmt.Fprintf(&exporters, "  otlp_grpc/%s:\n    endpoint: %s\n    tls:\n      insecure: true\n", n, backends[n])
		if i > 0 {
			ids.WriteString(", ")
		}
		ids.WriteString("otlp_grpc/" + n)
	}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[1]d
exporters:
%[3]sservice:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [%[4]s]
  telemetry:
    logs:
      level: info
    metrics:
      level: basic
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %[2]d
`, ports.OTLPGRPC, ports.Metrics, exporters.String(), ids.String())
	path := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("collector config: %w", err)
	}
	c := &Collector{OTLPGRPC: fmt.Sprintf("127.0.0.1:%d", ports.OTLPGRPC), log: log, bin: bin, dir: dir, cfg: path,
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.Metrics)}
	if err := c.start(ctx, "otelcol.log"); err != nil {
		return nil, err
	}
	return c, nil
}

// start runs the collector with its config, logging to logName in its
// directory, and waits until it serves.
func (c *Collector) start(ctx context.Context, logName string) error {
	p, err := proc.Start(c.log, "otelcol", filepath.Join(c.dir, logName), c.bin, "--config", c.cfg)
	if err != nil {
		return err
	}
	err = waitHTTP(ctx, p, c.metricsURL, 60*time.Second)
	if err == nil {
		err = waitListening(ctx, p, c.OTLPGRPC, 30*time.Second)
	}
	if err != nil {
		_ = p.Stop(stopGrace)
		return err
	}
	c.p = p
	return nil
}

// Down stops the collector (an outage: the tracer's exports find no one);
// Up starts it again, logging to otelcol.<n>.log.
func (c *Collector) Down() error { return c.p.Stop(stopGrace) }

// Up starts the collector again after Down, on the same ports.
func (c *Collector) Up(ctx context.Context) error {
	c.restarts++
	return c.start(ctx, fmt.Sprintf("otelcol.%d.log", c.restarts))
}

// waitListening waits until addr accepts TCP connections.
func waitListening(ctx context.Context, p *proc.Process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if done, perr := p.Exited(); done {
			return fmt.Errorf("%s exited (%w):\n%s", p.Name, perr, p.LogTail(3000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %s: %w\n%s", p.Name, addr, timeout, err, p.LogTail(3000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Close stops the collector (it drains its exporters' queues first).
func (c *Collector) Close() error { return c.p.Stop(stopGrace) }

// Log returns the tail of the collector's log.
func (c *Collector) Log(n int) string { return c.p.LogTail(n) }
