package metrics

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/measure"

	"github.com/prometheus/client_golang/prometheus"
)

// series gathers c and returns the series of one metric by their labels
// ("name=value,..." in label name order): a counter's or gauge's value, a
// histogram's sample count. A series that does not exist is not in the map.
func series(t *testing.T, c prometheus.Collector, metric string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(labels)
			key := strings.Join(labels, ",")
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func wantSeries(t *testing.T, c prometheus.Collector, metric string, want map[string]float64) {
	t.Helper()
	got := series(t, c, metric)
	if len(got) != len(want) {
		t.Errorf("%s: %d series %v, want %v", metric, len(got), got, want)
		return
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s{%s} = %v (exists %v), want %v; all: %v", metric, k, g, ok, v, got)
		}
	}
}

// The series alerts compute increase() over exist at zero once a pod of the
// namespace is seen, so that the first event is an increase from 0 to 1.
func TestPodSeenCreatesAlertSeriesAtZero(t *testing.T) {
	rec := NewRecorder(Limits{})
	rec.PodSeen("shop", "ReplicaSet")
	rec.PodSeen("shop", "ReplicaSet") // another pod of the namespace: nothing changes

	wantSeries(t, rec, "podchron_grace_period_overruns_total", map[string]float64{"namespace=shop": 0})
	wantSeries(t, rec, "podchron_oom_kills_total", map[string]float64{
		"namespace=shop,scope=container": 0, "namespace=shop,scope=pod": 0,
		"namespace=shop,scope=node_allocatable": 0, "namespace=shop,scope=node": 0})
	wantSeries(t, rec, "podchron_pod_terminations_total", map[string]float64{
		"namespace=shop,overrun=false,owner_kind=ReplicaSet": 0, "namespace=shop,overrun=true,owner_kind=ReplicaSet": 0})
	wantSeries(t, rec, "podchron_container_exits_total", map[string]float64{
		"cause=error,namespace=shop": 0, "cause=oom_killed,namespace=shop": 0,
		"cause=liveness_restart,namespace=shop": 0, "cause=evicted,namespace=shop": 0})
	wantSeries(t, rec, "podchron_oom_kills_misreported_total", map[string]float64{"namespace=shop,reason=Error": 0})
	wantSeries(t, rec, "podchron_pods_terminating_stuck", map[string]float64{"namespace=shop": 0})
	// Histograms are not created: an empty histogram has no quantile to show.
	for _, h := range []string{"podchron_pod_startup_duration_seconds", "podchron_pod_termination_duration_seconds",
		"podchron_container_stop_duration_seconds", "podchron_cni_duration_seconds"} {
		if got := series(t, rec, h); len(got) != 0 {
			t.Errorf("%s: %v after PodSeen only, want no series", h, got)
		}
	}

	// The first events in the namespace: the same series, now at 1.
	rec.GracePeriodOverrun("shop")
	rec.PodTermination("shop", "ReplicaSet", 31*time.Second, true, "")
	rec.OOMKill("shop", "pod")
	rec.ContainerExit("shop", "oom_killed")
	rec.OOMKillMisreported("shop", "Error")
	wantSeries(t, rec, "podchron_oom_kills_misreported_total", map[string]float64{"namespace=shop,reason=Error": 1})
	wantSeries(t, rec, "podchron_grace_period_overruns_total", map[string]float64{"namespace=shop": 1})
	wantSeries(t, rec, "podchron_oom_kills_total", map[string]float64{
		"namespace=shop,scope=container": 0, "namespace=shop,scope=pod": 1,
		"namespace=shop,scope=node_allocatable": 0, "namespace=shop,scope=node": 0})
	wantSeries(t, rec, "podchron_pod_terminations_total", map[string]float64{
		"namespace=shop,overrun=false,owner_kind=ReplicaSet": 0, "namespace=shop,overrun=true,owner_kind=ReplicaSet": 1})
	wantSeries(t, rec, "podchron_container_exits_total", map[string]float64{
		"cause=error,namespace=shop": 0, "cause=oom_killed,namespace=shop": 1,
		"cause=liveness_restart,namespace=shop": 0, "cause=evicted,namespace=shop": 0})

	// A pod seen again (or another one) leaves the counts alone.
	rec.PodSeen("shop", "ReplicaSet")
	wantSeries(t, rec, "podchron_grace_period_overruns_total", map[string]float64{"namespace=shop": 1})
}

// PodSeen never resets the stuck gauge of a namespace, and the gauge still
// balances entries and exits afterwards.
func TestPodSeenKeepsStuckCount(t *testing.T) {
	rec := NewRecorder(Limits{})
	rec.StuckTerminating("shop", measure.PodRef{}, true)
	rec.PodSeen("shop", "StatefulSet")
	wantSeries(t, rec, "podchron_pods_terminating_stuck", map[string]float64{"namespace=shop": 1})
	rec.PodSeen("batch", "Job")
	rec.StuckTerminating("batch", measure.PodRef{}, false) // unmatched: stays 0
	rec.StuckTerminating("batch", measure.PodRef{}, true)
	rec.StuckTerminating("shop", measure.PodRef{}, false)
	rec.PodSeen("shop", "StatefulSet")
	wantSeries(t, rec, "podchron_pods_terminating_stuck", map[string]float64{"namespace=shop": 0, "namespace=batch": 1})
	rec.StuckTerminating("batch", measure.PodRef{}, false)
	rec.StuckTerminating("batch", measure.PodRef{}, false)
	wantSeries(t, rec, "podchron_pods_terminating_stuck", map[string]float64{"namespace=shop": 0, "namespace=batch": 0})
}

// PodSeen goes through the limiters: namespaces past the cap share the
// "other" series, and admitting them is not counted as a fold (no
// observation was folded); the observation that follows is.
func TestPodSeenBounded(t *testing.T) {
	rec := NewRecorder(Limits{Namespaces: 2, OwnerKinds: 1})
	for _, ns := range []string{"a", "b", "c", "d", "e"} {
		rec.PodSeen(ns, "Kind-"+ns)
	}
	wantSeries(t, rec, "podchron_grace_period_overruns_total", map[string]float64{
		"namespace=a": 0, "namespace=b": 0, "namespace=other": 0})
	wantSeries(t, rec, "podchron_pod_terminations_total", map[string]float64{
		"namespace=a,overrun=false,owner_kind=Kind-a": 0, "namespace=a,overrun=true,owner_kind=Kind-a": 0,
		"namespace=b,overrun=false,owner_kind=other": 0, "namespace=b,overrun=true,owner_kind=other": 0,
		"namespace=other,overrun=false,owner_kind=other": 0, "namespace=other,overrun=true,owner_kind=other": 0})
	wantSeries(t, rec, "podchron_label_values_folded_total", map[string]float64{
		"label=namespace": 0, "label=owner_kind": 0, "label=phase": 0, "label=plugin": 0, "label=command": 0, "label=result": 0,
		"label=cause": 0, "label=scope": 0, "label=signal": 0, "label=sender_kind": 0, "label=reason": 0, "label=long_pole": 0})
	rec.GracePeriodOverrun("e")
	wantSeries(t, rec, "podchron_grace_period_overruns_total", map[string]float64{
		"namespace=a": 0, "namespace=b": 0, "namespace=other": 1})
	if got := series(t, rec, "podchron_label_values_folded_total")["label=namespace"]; got != 1 {
		t.Errorf("folded namespaces %v, want 1 (the overrun)", got)
	}
}

// The first run of a CNI plugin and command creates its error series at
// zero, so that its first failure is an increase.
func TestCNIErrorSeriesFromFirstRun(t *testing.T) {
	rec := NewRecorder(Limits{})
	rec.CNICall("bridge", "ADD", "ok", 30*time.Millisecond)
	wantSeries(t, rec, "podchron_cni_duration_seconds", map[string]float64{
		"command=ADD,plugin=bridge,result=ok": 1, "command=ADD,plugin=bridge,result=error": 0})
	rec.CNICall("bridge", "ADD", "error", 5*time.Second)
	rec.CNICall("bridge", "DEL", "ok", time.Millisecond)
	wantSeries(t, rec, "podchron_cni_duration_seconds", map[string]float64{
		"command=ADD,plugin=bridge,result=ok": 1, "command=ADD,plugin=bridge,result=error": 1,
		"command=DEL,plugin=bridge,result=ok": 1, "command=DEL,plugin=bridge,result=error": 0})
}
