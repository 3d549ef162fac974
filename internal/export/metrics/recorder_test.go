package metrics

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/podchron/podchron/internal/measure"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/podchron/podchron/internal/names"
)

// labelValues gathers c and returns, per metric name, the distinct values
// of each label.
func labelValues(t *testing.T, c prometheus.Collector) map[string]map[string]map[string]bool {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]map[string]bool{}
	for _, mf := range mfs {
		byLabel := map[string]map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if byLabel[lp.GetName()] == nil {
					byLabel[lp.GetName()] = map[string]bool{}
				}
				byLabel[lp.GetName()][lp.GetValue()] = true
			}
		}
		out[mf.GetName()] = byLabel
	}
	return out
}

func TestCardinalityGuard(t *testing.T) {
	rec := NewRecorder(Limits{Namespaces: 10, OwnerKinds: 2, CNIPlugins: 3, Values: 4})
	const n = 1000
	for i := range n {
		ns := fmt.Sprintf("ci-run-%d", i)
		s := fmt.Sprint(i)
		rec.PodSeen(ns, "Kind"+s)
		rec.PodStartup(ns, "Kind"+s, "pole"+s, time.Second, "")
		rec.PodTermination(ns, "Kind"+s, time.Second, i%2 == 0, "")
		rec.PodNotReady(ns, "Kind"+s, time.Second, "")
		rec.ContainerStop(ns, time.Second, i%3 == 0, "")
		rec.GracePeriodOverrun(ns)
		rec.ContainerExit(ns, "cause"+s)
		rec.OOMKill(ns, "scope"+s)
		rec.CNICall("plugin"+s, "CMD"+s, "result"+s, time.Millisecond)
		rec.Signal("SIG"+s, "sender"+s)
		rec.CorrelationMiss("reason" + s)
		rec.StuckTerminating(ns, measure.PodRef{Name: "p" + s, UID: "u" + s, TraceID: "t" + s}, true)
	}

	// The most values each label may take: its cap, its known values and
	// "other".
	maxValues := map[string]int{
		"namespace":   10 + 1,
		"owner_kind":  7 + 2 + 1,
		"plugin":      3 + 1,
		"command":     6 + 2 + 1,
		"result":      4 + 2 + 1,
		"cause":       4 + len(zeroExitCauses) + 1,
		"scope":       2*len(names.OOMScopes) + 1,
		"long_pole":   2*len(names.StartupPhases) + 1,
		"signal":      72 + 1,
		"sender_kind": 5 + 4 + 1,
		"reason":      len(names.MissReasons) + 4 + 1,
		"overrun":     2,
		"sigkill":     2,
		"le":          len(cniBuckets) + 1,
		"label":       12,
		"metric":      5,
		// One series per stuck pod, at most MaxStuckPods at once.
		"pod":      MaxStuckPods,
		"uid":      MaxStuckPods,
		"trace_id": MaxStuckPods,
	}
	for metric, byLabel := range labelValues(t, rec) {
		for label, values := range byLabel {
			limit, ok := maxValues[label]
			if !ok {
				t.Errorf("%s has unexpected label %s", metric, label)
				continue
			}
			if label == "le" {
				continue // buckets differ per histogram; fixed anyway
			}
			if len(values) > limit {
				t.Errorf("%s{%s}: %d distinct values, cap %d", metric, label, len(values), limit)
			}
		}
	}

	// Each histogram series is bounded: namespaces (11) × owner kinds.
	if got := testutil.CollectAndCount(rec, "podchron_grace_period_overruns_total"); got != 11 {
		t.Errorf("podchron_grace_period_overruns_total: %d series, want 11 (10 namespaces + other)", got)
	}
	if got := testutil.ToFloat64(rec.folded.WithLabelValues("namespace")); got < n-10 {
		t.Errorf("folded namespaces %v, want at least %d", got, n-10)
	}
	// All folded namespaces share one "other" series.
	if got := testutil.ToFloat64(rec.overruns.WithLabelValues("other")); got != n-10 {
		t.Errorf("overruns{namespace=other} = %v, want %d", got, n-10)
	}
	// Admission is sticky: an admitted namespace keeps its own series.
	rec.GracePeriodOverrun("ci-run-3")
	if got := testutil.ToFloat64(rec.overruns.WithLabelValues("ci-run-3")); got != 2 {
		t.Errorf("overruns{namespace=ci-run-3} = %v, want 2", got)
	}
	// Known values are never folded, however full the cap. (Three owner
	// kind observations per iteration, 998 kinds past the cap.)
	rec.PodStartup("ci-run-0", "StatefulSet", "readiness", time.Second, "")
	if got := testutil.ToFloat64(rec.folded.WithLabelValues("owner_kind")); got != 3*(n-2) {
		t.Errorf("folded owner kinds %v, want %d", got, 3*(n-2))
	}
}

func TestLabelValueSanitized(t *testing.T) {
	rec := NewRecorder(Limits{})
	long := strings.Repeat("é", 200) // 400 bytes
	rec.ContainerExit("bad\xff\xfens", long)
	rec.OOMKill("", "")
	rec.PodStartup("", "", "readiness", time.Second, "")
	lv := labelValues(t, rec)
	for v := range lv["podchron_container_exits_total"]["namespace"] {
		if !utf8.ValidString(v) {
			t.Errorf("invalid UTF-8 label value %q", v)
		}
	}
	for v := range lv["podchron_container_exits_total"]["cause"] {
		if len(v) > maxLabelValueLen || !utf8.ValidString(v) {
			t.Errorf("cause %q: %d bytes, valid %v", v, len(v), utf8.ValidString(v))
		}
	}
	if !lv["podchron_oom_kills_total"]["namespace"]["unknown"] || !lv["podchron_oom_kills_total"]["scope"]["unknown"] {
		t.Errorf("empty values not reported as unknown: %v", lv["podchron_oom_kills_total"])
	}
	if !lv["podchron_pod_startup_duration_seconds"]["owner_kind"]["none"] {
		t.Errorf("a pod without owner not reported as owner_kind=none: %v", lv["podchron_pod_startup_duration_seconds"])
	}
}

func TestNegativeDurationsNotObserved(t *testing.T) {
	rec := NewRecorder(Limits{})
	rec.PodStartup("default", "ReplicaSet", "readiness", -time.Second, "")
	rec.PodTermination("default", "ReplicaSet", -time.Second, false, "")
	rec.PodNotReady("default", "ReplicaSet", -time.Second, "")
	rec.ContainerStop("default", -time.Second, true, "")
	rec.CNICall("bridge", "ADD", "success", -time.Millisecond)
	for _, name := range []string{
		"podchron_pod_startup_duration_seconds", "podchron_pod_termination_duration_seconds",
		"podchron_pod_not_ready_duration_seconds", "podchron_container_stop_duration_seconds",
	} {
		if got := testutil.CollectAndCount(rec, name); got != 0 {
			t.Errorf("%s: %d series after only negative durations, want 0", name, got)
		}
	}
	// The plugin ran: only its ok and error series exist, empty.
	if got := series(t, rec, "podchron_cni_duration_seconds"); len(got) != 2 || got["command=ADD,plugin=bridge,result=ok"] != 0 || got["command=ADD,plugin=bridge,result=error"] != 0 {
		t.Errorf("CNI series after a negative duration: %v, want ok and error, empty", got)
	}
	for _, h := range []string{histPodStartup, histPodTermination, histPodNotReady, histContainerStop, histCNI} {
		if got := testutil.ToFloat64(rec.negativeDuration.WithLabelValues(h)); got != 1 {
			t.Errorf("negative_durations{metric=%s} = %v, want 1", h, got)
		}
	}
	// The termination itself still counts.
	if got := testutil.ToFloat64(rec.terminations.WithLabelValues("default", "ReplicaSet", "false")); got != 1 {
		t.Errorf("terminations = %v, want 1", got)
	}
}

func stuckValue(t *testing.T, rec *Recorder, ns string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(rec.stuck)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if labelIs(m, "namespace", ns) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name && lp.GetValue() == value {
			return true
		}
	}
	return false
}

func TestStuckGaugeNeverNegative(t *testing.T) {
	rec := NewRecorder(Limits{})
	steps := []struct {
		stuck bool
		want  float64
	}{
		{false, 0}, // leaves before ever entering: ignored
		{true, 1},
		{true, 2},
		{false, 1},
		{false, 0},
		{false, 0}, // one too many
		{false, 0},
		{true, 1},
	}
	for i, s := range steps {
		rec.StuckTerminating("default", measure.PodRef{}, s.stuck)
		if got := stuckValue(t, rec, "default"); got != s.want {
			t.Fatalf("step %d (stuck=%v): gauge %v, want %v", i, s.stuck, got, s.want)
		}
	}
	// No series for a namespace that only ever left.
	rec.StuckTerminating("never-entered", measure.PodRef{}, false)
	if got := testutil.CollectAndCount(rec, "podchron_pods_terminating_stuck"); got != 1 {
		t.Errorf("%d stuck series, want 1", got)
	}
}

// Random enter/leave sequences against a model: the gauge is
// max(0, ...) at every step, also for namespaces folded into "other".
func TestStuckGaugeModel(t *testing.T) {
	rec := NewRecorder(Limits{Namespaces: 2})
	rng := rand.New(rand.NewPCG(1, 2))
	namespaces := []string{"a", "b", "c", "d"} // c and d fold into other
	label := func(ns string) string {
		if ns == "c" || ns == "d" {
			return "other"
		}
		return ns
	}
	// Admit a and b first, so folding is deterministic.
	rec.StuckTerminating("a", measure.PodRef{}, false)
	rec.StuckTerminating("b", measure.PodRef{}, false)
	model := map[string]float64{}
	for i := range 2000 {
		ns := namespaces[rng.IntN(len(namespaces))]
		stuck := rng.IntN(2) == 0
		rec.StuckTerminating(ns, measure.PodRef{}, stuck)
		l := label(ns)
		if stuck {
			model[l]++
		} else if model[l] > 0 {
			model[l]--
		}
		if got := stuckValue(t, rec, l); got != model[l] || got < 0 {
			t.Fatalf("step %d: %s stuck=%v: gauge{%s} %v, model %v", i, ns, stuck, l, got, model[l])
		}
	}
}

func TestStuckGaugeConcurrent(t *testing.T) {
	rec := NewRecorder(Limits{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := fmt.Sprintf("ns%d", g%2)
			for range 500 {
				rec.StuckTerminating(ns, measure.PodRef{}, true)
				rec.StuckTerminating(ns, measure.PodRef{}, false)
				rec.StuckTerminating(ns, measure.PodRef{}, false) // unmatched
			}
		}()
	}
	wg.Wait()
	for _, ns := range []string{"ns0", "ns1"} {
		if got := stuckValue(t, rec, ns); got != 0 {
			t.Errorf("gauge{%s} = %v after balanced and extra leaves, want 0", ns, got)
		}
	}
}

func TestRecorderPedanticRegistry(t *testing.T) {
	// The pedantic registry checks that Describe and Collect agree.
	reg := prometheus.NewPedanticRegistry()
	rec := NewRecorder(Limits{})
	reg.MustRegister(rec)
	rec.PodStartup("default", "ReplicaSet", "readiness", time.Second, "")
	rec.Signal("SIGTERM", "kubelet")
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
