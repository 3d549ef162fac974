package metrics

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/measure"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/prometheus/client_golang/prometheus"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var discard = slog.New(slog.DiscardHandler)

type fakeSpanStats struct {
	exported uint64
	dropped  map[string]uint64
}

func (f *fakeSpanStats) Stats() (uint64, map[string]uint64) { return f.exported, f.dropped }

func (f *fakeSpanStats) LagBuckets() []float64 { return []float64{0.5, 1, 5} }

func (f *fakeSpanStats) Lags() map[string]SpanLag {
	return map[string]SpanLag{
		"container.run":   {Buckets: []uint64{3, 7, 8}, Count: 8, Sum: 6.25},
		"pod.termination": {Buckets: []uint64{1, 1, 2}, Count: 2, Sum: 3.5},
	}
}

// fixture is a registry with every podchron collector, fed a fixed sequence
// of observations and fixed collector inputs.
func fixture(t *testing.T) (*prometheus.Registry, *Health) {
	t.Helper()
	rec := NewRecorder(Limits{Namespaces: 3, CNIPlugins: 2, Values: 4})
	s := time.Second
	// Pods seen: their namespaces' alerting series exist at zero.
	rec.PodSeen("default", "ReplicaSet")
	rec.PodSeen("kube-system", "DaemonSet")
	rec.PodSeen("batch", "Job")
	rec.PodSeen("team-a", "") // namespace past the cap: other (a fold counted only by observations)
	rec.PodStartup("default", "ReplicaSet", "image_pull", 1500*time.Millisecond, "4bf92f3577b34da6a3ce929d0e0e4736")
	rec.PodStartupPhase("default", "image_pull", 900*time.Millisecond, "4bf92f3577b34da6a3ce929d0e0e4736")
	rec.PodStartupPhase("default", "readiness", 400*time.Millisecond, "")
	rec.PodStartup("default", "ReplicaSet", "image_pull", 42*s, "")
	rec.PodStartup("kube-system", "DaemonSet", "sandbox", 800*time.Millisecond, "")
	rec.PodStartup("batch", "Job", "init", 3*time.Minute, "")
	rec.PodStartup("team-a", "", "", 2*s, "") // namespace past the cap: other; no owner, no long pole: none, unknown
	rec.PodStartup("default", "Rollout", "readiness", -s, "")
	rec.PodTermination("default", "ReplicaSet", 2*s, false, "")
	rec.PodTermination("default", "StatefulSet", 31*s, true, "")
	rec.PodNotReady("default", "ReplicaSet", 8*s, "4bf92f3577b34da6a3ce929d0e0e4736")
	rec.EndpointWithdrawnAfterNotReady("default")
	rec.ContainerStop("default", 120*time.Millisecond, false, "")
	rec.ContainerStop("default", 30*s, true, "")
	rec.GracePeriodOverrun("default")
	rec.ContainerExit("default", "completed")
	rec.ContainerExit("default", "oom_killed")
	rec.ContainerExit("batch", "error")
	rec.ContainerExit("batch", "signal")
	rec.ContainerExit("batch", "evicted") // created at zero: never folded
	rec.ContainerExit("batch", "killed_in_pod")
	rec.ContainerExit("batch", "killed_external")
	rec.ContainerExit("batch", "unknown") // fifth cause besides those: other
	rec.OOMKill("default", "memcg")
	rec.OOMKill("kube-system", "node")
	rec.OOMKillMisreported("default", "Error")
	rec.SignalsThrottled("default", 1500)
	rec.CNICall("bridge", "ADD", "ok", 35*time.Millisecond)
	rec.CNICall("bridge", "DEL", "ok", 4*time.Millisecond)
	rec.CNICall("portmap", "ADD", "error", 2*s)
	rec.CNICall("/opt/cni/bin/\xffbad", "ADD", "ok", time.Millisecond) // third plugin: other
	rec.Signal("SIGTERM", "kubelet")
	rec.Signal("SIGKILL", "runtime")
	rec.Signal("SIGKILL", "kernel")
	rec.Signal("SIGINT", "in_pod")
	rec.CorrelationMiss("unknown_cgroup")
	rec.CorrelationMiss("unknown_cgroup")
	rec.CorrelationMiss("pod_not_found")
	web0 := measure.PodRef{Name: "web-0", UID: "uid-web-0", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	web1 := measure.PodRef{Name: "web-1", UID: "uid-web-1", TraceID: "00f067aa0ba902b7a3ce929d0e0e4736"}
	job := measure.PodRef{Name: "job-x", UID: "uid-job-x", TraceID: "11f067aa0ba902b7a3ce929d0e0e4736"}
	rec.StuckTerminating("default", web0, true)
	rec.StuckTerminating("default", web1, true)
	rec.StuckTerminating("default", web1, false)
	rec.StuckTerminating("batch", job, true)
	rec.StuckTerminating("batch", job, false)
	rec.StuckTerminating("batch", job, false) // unmatched: stays 0

	counters := func() (map[kernel.EventType]kernel.Counter, error) {
		return map[kernel.EventType]kernel.Counter{
			kernel.EventExec:           {Emitted: 1200, Lost: 3},
			kernel.EventFork:           {Emitted: 900},
			kernel.EventExit:           {Emitted: 1100},
			kernel.EventSignalGenerate: {Emitted: 40},
			kernel.EventOOMKill:        {Emitted: 2},
		}, nil
	}
	spans := &fakeSpanStats{exported: 77, dropped: map[string]uint64{"queue_full": 5, "export_error": 1}}

	h := NewHealth(HealthOptions{Logger: discard})
	h.SetReady(SourceKernel, true, "")
	h.SetReady(SourceRuntime, false, "dial unix /run/containerd/containerd.sock: connect: connection refused")
	h.SetReady(SourceAPIServer, true, "")

	reg, err := NewRegistry(
		rec,
		NewProbeCollector(counters, discard),
		NewReaderCollector(func() uint64 { return 2 }),
		NewSpanCollector(spans),
		NewBuildInfoCollector(BuildInfo{Version: "v0.1.0-test", GoVersion: "go1.26.8", Kernel: "6.1.0-test-amd64"}),
		NewSourceCollector(h),
		NewAPIWatchCollector(func() APIWatchStats {
			return APIWatchStats{EventWatches: 3, EventSweeps: 41, Unswept: 7, SweepsDeferred: 6, WindowLists: 12, WindowsResumed: 30, ResumesExpired: 2,
				WindowListsFailed: 5, WindowListsCanceled: 4, EndpointChanges: 9, EndpointSliceErrors: 1}
		}),
		NewPipelineCollector(func() PipelineStats {
			return PipelineStats{Queues: []PipelineQueue{{Node: "kernel", Length: 3, Blocked: 1500 * time.Millisecond,
				Delay: Histogram{Count: 10, Sum: 12.5, Buckets: map[float64]uint64{0.001: 2, 1: 7, 10: 9}}}}, PendingFacts: 7}
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg, h
}

// scrape GETs /metrics from a Server on reg, with an Accept header.
func scrape(t *testing.T, reg *prometheus.Registry, h *Health, accept string) (string, string) {
	t.Helper()
	srv := NewServer(reg, h, discard)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", w.Code, w.Body)
	}
	return w.Body.String(), w.Header().Get("Content-Type")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test -update rewrites it):\n%s", path, diffLines(string(want), got))
	}
}

// diffLines lists the lines only in want (-) or only in got (+).
func diffLines(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return "(same lines, different order)"
	}
	return b.String()
}

func TestMetricsGolden(t *testing.T) {
	reg, h := fixture(t)
	body, ctype := scrape(t, reg, h, "")
	if !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ctype)
	}
	golden(t, "metrics.golden", body)
}

func TestMetricsGoldenOpenMetrics(t *testing.T) {
	reg, h := fixture(t)
	body, ctype := scrape(t, reg, h, "application/openmetrics-text;version=1.0.0")
	if !strings.HasPrefix(ctype, "application/openmetrics-text") {
		t.Errorf("Content-Type %q, want application/openmetrics-text", ctype)
	}
	// Exemplars carry the time they were observed: the golden has "T".
	body = exemplarTime.ReplaceAllString(body, "$1 T")
	if !strings.Contains(body, `# {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 1.5 T`) {
		t.Errorf("no trace-id exemplar on the start-up histogram:\n%s", body)
	}
	golden(t, "metrics.openmetrics.golden", body)
}

// The output is the same at every scrape of the same state.
func TestMetricsDeterministic(t *testing.T) {
	reg, h := fixture(t)
	a, _ := scrape(t, reg, h, "")
	b, _ := scrape(t, reg, h, "")
	if a != b {
		t.Errorf("two scrapes differ:\n%s", diffLines(a, b))
	}
}

// TestPromtoolCheckMetrics lints the exposition with promtool (Debian
// package prometheus).
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus); metric names and types not linted")
	}
	reg, h := fixture(t)
	body, _ := scrape(t, reg, h, "")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

var exemplarTime = regexp.MustCompile(`(# \{[^}]*\} [0-9.e+-]+) [0-9.e+-]+`)
