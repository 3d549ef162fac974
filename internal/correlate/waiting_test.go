package correlate_test

import (
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
)

// The model says it waits on its clock while a timer decides a phase's end
// soon (a container settling, a start-up settling, a pod terminating), and
// not once every phase is decided: the pipeline then checks the kernel's
// progress at its quiet pace.
func TestWaitingFollowsTheTimers(t *testing.T) {
	s := newSim(t)
	step := func(what string, want bool) {
		t.Helper()
		if got := s.c.Waiting(); got != want {
			t.Errorf("%s: Waiting() = %v, want %v", what, got, want)
		}
	}
	app := s.startup() // ends with a tick 2 s after Ready
	if len(s.find(names.SpanPodStartup)) != 1 {
		t.Fatalf("no pod.startup after the start-up")
	}
	step("started, every container settled", false)
	s.tick(10 * time.Second)
	step("a quiet tick later", false)

	// A probe's process runs and ends: a fact, then nothing to decide.
	probe := s.exec("app", 99, "cat", "/tmp/ready")
	step("an exec handled", true)
	s.at(5 * time.Millisecond)
	s.exit("app", probe, 0, 0)
	s.tick(time.Second)
	step("the probe's process ended, a tick later", false)

	// The app's init exits: only the kernel saw it; the container settles
	// (waits for the runtime's word) for a while.
	s.exit("app", app, 1, 0)
	s.tick(300 * time.Millisecond)
	step("the app exited, its end not decided", true)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.tick(3 * time.Second)
	step("the app's end decided", false)

	// A deletion: the pod is terminating until its object is gone.
	s.deleteWith(30)
	s.tick(5 * time.Second)
	step("terminating", true)
	s.gone()
	s.tick(3 * time.Second)
	if len(s.find(names.SpanPodTermination)) != 1 {
		t.Fatalf("no pod.termination after the pod was gone")
	}
	step("the trace finished", false)
}

// An input held for another source's progress is waited on too, until
// that progress releases it.
func TestWaitingWhileInputsAreHeld(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{Start: &fact.Start{At: s.now, Progress: []string{fact.SourceKernel}}})
	s.in(fact.Input{Progress: &fact.Progress{Source: fact.SourceKernel, Until: s.now}})
	s.at(10 * time.Second)
	s.in(fact.Input{Progress: &fact.Progress{Source: fact.SourceKernel, Until: s.now}})
	if s.c.Waiting() {
		t.Fatalf("waiting with nothing held and no timer")
	}
	s.at(time.Millisecond)
	s.pod()
	if s.c.Pending() != 1 || !s.c.Waiting() {
		t.Fatalf("a pod update held for the kernel's progress: %d pending, waiting %v", s.c.Pending(), s.c.Waiting())
	}
	s.at(time.Second)
	s.in(fact.Input{Progress: &fact.Progress{Source: fact.SourceKernel, Until: s.now}})
	if s.c.Pending() != 0 || s.c.Waiting() {
		t.Errorf("released and a second of timers later: %d pending, waiting %v", s.c.Pending(), s.c.Waiting())
	}
}
