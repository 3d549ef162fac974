package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestProbeCollectorError(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fail := true
	c := NewProbeCollector(func() (map[kernel.EventType]kernel.Counter, error) {
		if fail {
			return nil, errors.New("read counters for exec: bad map")
		}
		return map[kernel.EventType]kernel.Counter{kernel.EventExec: {Emitted: 5, Lost: 1}}, nil
	}, log)

	want := `
# HELP podchron_probe_up 1 if the kernel probe counters could be read at this scrape, 0 if not.
# TYPE podchron_probe_up gauge
podchron_probe_up 0
`
	for range 3 {
		if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings for 3 failed scrapes, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "bad map") {
		t.Errorf("the error is not logged:\n%s", logs.String())
	}

	fail = false
	if got := testutil.CollectAndCount(c, "podchron_probe_events_total"); got != len(kernel.EventTypes()) {
		t.Errorf("%d event type series, want %d (every type, 0 if unseen)", got, len(kernel.EventTypes()))
	}
	if !strings.Contains(logs.String(), "readable again") {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP podchron_probe_up 1 if the kernel probe counters could be read at this scrape, 0 if not.
# TYPE podchron_probe_up gauge
podchron_probe_up 1
`), "podchron_probe_up"); err != nil {
		t.Error(err)
	}
}

func TestProbeCollectorNilFunc(t *testing.T) {
	c := NewProbeCollector(nil, discard)
	if got := testutil.ToFloat64(c); got != 0 {
		t.Errorf("probe_up %v without probes, want 0", got)
	}
}

func TestProbeCollectorUnknownType(t *testing.T) {
	c := NewProbeCollector(func() (map[kernel.EventType]kernel.Counter, error) {
		return map[kernel.EventType]kernel.Counter{kernel.EventType(42): {Emitted: 7}}, nil
	}, discard)
	if got := testutil.CollectAndCount(c, "podchron_probe_events_total"); got != len(kernel.EventTypes())+1 {
		t.Errorf("%d series, want the known types and event(42)", got)
	}
}

func TestReaderCollector(t *testing.T) {
	var n uint64 = 9
	if got := testutil.ToFloat64(NewReaderCollector(func() uint64 { return n })); got != 9 {
		t.Errorf("decode errors %v, want 9", got)
	}
	if got := testutil.ToFloat64(NewReaderCollector(nil)); got != 0 {
		t.Errorf("decode errors %v without a reader, want 0", got)
	}
}

func TestSpanCollectorFoldsReasons(t *testing.T) {
	stats := &fakeSpanStats{exported: 1, dropped: map[string]uint64{}}
	c := NewSpanCollector(stats)
	for i := range maxDropReasons + 10 {
		stats.dropped[fmt.Sprintf("reason%02d", i)] = 1
	}
	if got := testutil.CollectAndCount(c, "podchron_spans_dropped_total"); got != maxDropReasons+1 {
		t.Errorf("%d reason series, want %d and other", got, maxDropReasons)
	}
	// The admitted set is sticky: a new reason sorting first still goes to
	// other, so other never decreases.
	stats.dropped["aaa"] = 100
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if labelIs(m, "reason", "aaa") {
				t.Error("reason aaa exported past the cap")
			}
			if labelIs(m, "reason", "other") && m.GetCounter().GetValue() != 110 {
				t.Errorf("other = %v, want 110", m.GetCounter().GetValue())
			}
		}
	}
	if got := testutil.CollectAndCount(NewSpanCollector(nil)); got != 0 {
		t.Errorf("%d metrics without a sink, want 0", got)
	}
}

func TestBuildInfo(t *testing.T) {
	bi := CurrentBuildInfo("v1.2.3")
	if bi.GoVersion != runtime.Version() || bi.Kernel == "" || bi.Kernel == "unknown" {
		t.Errorf("CurrentBuildInfo = %+v", bi)
	}
	err := testutil.CollectAndCompare(NewBuildInfoCollector(BuildInfo{Version: "v1.2.3"}), strings.NewReader(`
# HELP podchron_build_info Always 1; the labels tell podchron's version, its Go version and the node's kernel.
# TYPE podchron_build_info gauge
podchron_build_info{goversion="unknown",kernel="unknown",version="v1.2.3"} 1
`))
	if err != nil {
		t.Error(err)
	}
}

func TestSourceCollector(t *testing.T) {
	h := NewHealth(HealthOptions{Logger: discard})
	c := NewSourceCollector(h)
	expect := func(kernel, runtime, api int) {
		t.Helper()
		want := fmt.Sprintf(`
# HELP podchron_source_up 1 if podchron's source (kernel, runtime, apiserver) is up, 0 if it is down; runtime or apiserver at 0 means degraded.
# TYPE podchron_source_up gauge
podchron_source_up{source="apiserver"} %d
podchron_source_up{source="kernel"} %d
podchron_source_up{source="runtime"} %d
`, api, kernel, runtime)
		if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	}
	expect(0, 0, 0)
	h.SetReady(SourceKernel, true, "")
	h.SetReady(SourceAPIServer, true, "")
	expect(1, 0, 1)
	h.SetReady(SourceRuntime, true, "")
	h.SetReady(SourceAPIServer, false, "watch: connection reset")
	expect(1, 1, 0)
}
