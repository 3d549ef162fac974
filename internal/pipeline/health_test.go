package pipeline

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/fact/cri"
)

// The sources' health is the pipeline's reading of their inputs: the API
// server's status as the watcher reports it, the runtime down from its
// first RuntimeUnavailable to its next event; changes only.
func TestSourceHealthFromInputs(t *testing.T) {
	var got []string
	h := sourceHealth{report: func(name string, ok bool, reason string) {
		got = append(got, name+" "+map[bool]string{true: "up", false: "down"}[ok]+" "+reason)
	}}
	since := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	for _, in := range []fact.Input{
		{Runtime: &cri.Event{Type: cri.EventContainerCreated}},
		{Runtime: &cri.Event{Type: cri.EventContainerStarted}},
		{Runtime: &cri.Event{Type: cri.EventRuntimeUnavailable, Gap: &cri.Gap{Since: since, Err: errRefused}}},
		{Runtime: &cri.Event{Type: cri.EventRuntimeUnavailable, Gap: &cri.Gap{Since: since, Err: errRefused}}},
		{Runtime: &cri.Event{Type: cri.EventRuntimeAvailable}},
		{API: &fact.APIStatus{Available: false, Err: "forbidden"}},
		{API: &fact.APIStatus{Available: true}},
		{Kernel: nil, Tick: true},
	} {
		h.observe(in)
	}
	down := (&cri.Gap{Since: since, Err: errRefused}).String()
	want := []string{"runtime up ", "runtime down " + down, "runtime up ", "apiserver down forbidden", "apiserver up "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reported\n  %q\nwant\n  %q", got, want)
	}
}

// A runtime with no containers sends no event: its first progress report
// (a successful poll) tells it is up; later ones change nothing, also after
// it went down (only its next event tells it is back).
func TestRuntimeUpFromItsFirstProgress(t *testing.T) {
	var got []string
	h := sourceHealth{report: func(name string, ok bool, reason string) {
		got = append(got, name+" "+map[bool]string{true: "up", false: "down"}[ok])
	}}
	progress := fact.Input{Progress: &fact.Progress{Source: fact.SourceRuntime}}
	for _, in := range []fact.Input{
		{Progress: &fact.Progress{Source: fact.SourceAPI}},
		progress,
		progress,
		{Runtime: &cri.Event{Type: cri.EventRuntimeUnavailable, Gap: &cri.Gap{Err: errRefused}}},
		progress,
		{Runtime: &cri.Event{Type: cri.EventRuntimeAvailable}},
	} {
		h.observe(in)
	}
	if want := []string{"runtime up", "runtime down", "runtime up"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reported %q, want %q", got, want)
	}
}

var errRefused = errors.New("connection refused")
