package correlate_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

// The stop is the runtime's first signal, whatever it is (the image's
// STOPSIGNAL, the pod's lifecycle.stopSignal), and an app that handles it
// and exits 128+signal (or 130) stopped gracefully.
func TestStopSignalAndGracefulExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
	}{
		{"SIGTERM handled, exit 143", syscall.SIGTERM, 143},
		{"SIGTERM handled, exit 130", syscall.SIGTERM, 130},
		{"STOPSIGNAL SIGQUIT handled, exit 131", syscall.SIGQUIT, 131},
		{"STOPSIGNAL SIGINT handled, exit 0", syscall.SIGINT, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(time.Second)
			grace := int64(30)
			del := s.now.Add(time.Duration(grace) * time.Second)
			s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
			s.pod()
			s.at(5 * time.Millisecond)
			sigAt := s.now
			s.signal("app", app, tc.sig, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
			s.at(40 * time.Millisecond)
			s.exit("app", app, tc.code, 0)
			exitAt := s.now
			s.cri(cri.EventContainerExited, "app", int32(tc.code), "Error")
			s.info.Deleted = true
			s.pod()
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			if run.Attr(names.ExitCause) != "completed" || run.Status == span.StatusError {
				t.Errorf("run: %s %v", run.Status, run.Attrs)
			}
			stop := s.one(names.SpanContainerStop)
			if !stop.Start.Equal(sigAt) || !stop.End.Equal(exitAt) || stop.Attr(names.SignalName) != kernel.SignalName(tc.sig) ||
				stop.Attr(names.SignalDisposition) != "handler" || stop.Status == span.StatusError {
				t.Errorf("stop %s–%s (signal at %s): %s %v", stop.Start, stop.End, sigAt, stop.Status, stop.Attrs)
			}
			if term := s.one(names.SpanPodTermination); term.Status == span.StatusError {
				t.Errorf("termination: %s %s", term.Status, term.StatusMessage)
			}
		})
	}
}

// A stop signal that is not SIGTERM and is ignored: the stop lasts from it
// to the SIGKILL's effect, not a 0 s span starting at the SIGKILL.
func TestIgnoredStopSignalThenSIGKILL(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	grace := int64(3)
	del := s.now.Add(time.Duration(grace) * time.Second)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	sigAt := s.now
	s.signal("app", app, syscall.SIGQUIT, "runc", kernel.SignalIgnored, kernel.DispositionIgnored)
	s.at(3 * time.Second)
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.info.Deleted = true
	s.pod()
	s.tick(3 * time.Second)
	stop := s.one(names.SpanContainerStop)
	if !stop.Start.Equal(sigAt) || stop.Duration() != 3*time.Second || stop.Attr(names.SignalName) != "SIGQUIT" ||
		stop.Attr(names.SignalDisposition) != "ignored" || stop.Attr(names.Sigkill) != true {
		t.Errorf("stop %s (%s) %v", stop.Start, stop.Duration(), stop.Attrs)
	}
	if term := s.one(names.SpanPodTermination); term.Attr(names.GracePeriodOverrun) != true {
		t.Errorf("termination: %v", term.Attrs)
	}
}

// An overrun belongs to one stop: a liveness restart that needed SIGKILL
