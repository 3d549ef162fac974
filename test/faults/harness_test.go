package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/podchron/podchron/internal/export/otlp"
	"github.com/podchron/podchron/internal/span"
)

// protocols are the OTLP transports every case runs over.
var protocols = []string{"grpc", "http/protobuf"}

// startExporter points the environment at c and starts the real exporter
// from it, with the tracer's defaults (queue 4096, batches of 512 or 3 MiB,
// retry 30 s, backoff 0.5–5 s, gRPC timeout 10 s) unless cfg says
// otherwise.
func startExporter(t *testing.T, c *collector, cfg otlp.Config) *otlp.Exporter {
	t.Helper()
	for _, k := range os.Environ() {
		if name, _, _ := strings.Cut(k, "="); strings.HasPrefix(name, "OTEL_") {
			t.Setenv(name, "")
		}
	}
	t.Setenv(otlp.EnvEndpoint, "http://"+c.addr)
	t.Setenv(otlp.EnvProtocol, c.proto)
	if err := otlp.ValidateEnv(); err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := otlp.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// podSpan is the i-th span of a run: a container span of a pod, with the
// attributes and pod resource the tracer puts on one (about 1 KiB encoded).
func podSpan(run string, i int) span.Span {
	uid := fmt.Sprintf("%s-pod-%d", run, i/8)
	tid := span.TraceIDForPod(uid)
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	return span.Span{
		TraceID: tid, SpanID: span.SpanIDFor(tid, fmt.Sprint("container/", i)), Parent: span.RootSpanID(tid),
		Name: "container.run", Start: t0, End: t0.Add(3 * time.Second), Status: span.StatusOK,
		Attrs: []span.Attr{
			span.String("k8s.container.name", "app"),
			span.String("container.id", strings.Repeat("c0ffee", 10)+"abcd"),
			span.String("container.image.name", "registry.example/shop/web"),
			span.Strings("container.image.tags", "1.27.3"),
			span.Int("k8s.container.restart_count", 0),
			span.Strings("process.command_args", "/usr/bin/web", "--port=8080", "--log-level=info"),
			span.Int("process.exit.code", 0),
			span.String("podchron.container.reason", "Completed"),
		},
		Resource: []span.Attr{
			span.String("k8s.pod.uid", uid),
			span.String("k8s.pod.name", "web-"+uid),
			span.String("k8s.namespace.name", "shop"),
			span.String("k8s.node.name", "node-1"),
		},
	}
}

// offer emits spans at rate per second from the calling goroutine until
// ctx ends, and returns how many it emitted.
func offer(ctx context.Context, e *otlp.Exporter, run string, rate int, mk func(run string, i int) span.Span) int {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
			e.Emit(mk(run, n))
			n++
		}
	}
}

// heap samples the Go heap in use every interval until stopped.
type heap struct {
	mu      sync.Mutex
	samples []uint64
	stop    chan struct{}
	done    chan struct{}
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func sampleHeap(every time.Duration) *heap {
	h := &heap{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			h.mu.Lock()
			h.samples = append(h.samples, heapInUse())
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// end stops sampling and returns the median and the peak.
func (h *heap) end() (median, peak uint64) {
	close(h.stop)
	<-h.done
	s := append([]uint64(nil), h.samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[len(s)-1]
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// figure is one row of the suite's table.
type figure struct {
	name string
	cols []string // key=value
}

var (
	figuresMu sync.Mutex
	figures   []figure
)

// report logs a case's figures and keeps them for the table TestMain
// prints.
func report(t *testing.T, kv ...any) {
	t.Helper()
	var cols []string
	for i := 0; i+1 < len(kv); i += 2 {
		cols = append(cols, fmt.Sprintf("%v=%v", kv[i], kv[i+1]))
	}
	t.Log(strings.Join(cols, "  "))
	figuresMu.Lock()
	figures = append(figures, figure{name: t.Name(), cols: cols})
	figuresMu.Unlock()
}

func TestMain(m *testing.M) {
	code := m.Run()
	printFigures()
	os.Exit(code)
}

// printFigures prints the figures every case reported, as one table.
func printFigures() {
	figuresMu.Lock()
	defer figuresMu.Unlock()
	if len(figures) > 0 {
		fmt.Println("\nOTLP fault suite figures:")
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		for _, f := range figures {
			fmt.Fprintf(tw, "%s\t%s\n", f.name, strings.Join(f.cols, "\t"))
		}
		_ = tw.Flush()
	}
}

// accountFor checks the invariants every case shares: each span offered is
// exported or dropped (and counted), the collector accepted exactly the
// exported ones, and none arrived twice.
func accountFor(t *testing.T, e *otlp.Exporter, c *collector, offered int) {
	t.Helper()
	exported, dropped, _ := e.Stats()
	accepted, dups, _ := c.stats()
	if exported+dropped != uint64(offered) {
		t.Errorf("exported %d + dropped %d (%+v) = %d, offered %d", exported, dropped, e.Drops(), exported+dropped, offered)
	}
	if uint64(accepted) != exported {
		t.Errorf("the collector accepted %d spans, the exporter counts %d exported", accepted, exported)
	}
	if dups != 0 {
		t.Errorf("%d spans reached the collector more than once", dups)
	}
}

// flush waits for the queue to drain (bounded: a stuck exporter fails the
// case, it does not hang the suite).
func flush(t *testing.T, e *otlp.Exporter, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}
