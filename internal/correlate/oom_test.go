package correlate_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/correlate"
	"github.com/podtrace/podtrace/internal/cri"
	"github.com/podtrace/podtrace/internal/probe"
)

func (s *sim) oomKill(name string, victim uint32, comm string) {
	s.kernel(&probe.OOMEvent{Header: probe.Header{Type: probe.EventOOMKill, Origin: probe.OriginTarget, TGID: victim, PID: victim, CgroupID: s.cg[name]},
		VictimTGID: victim, VictimKnown: true, VictimCgroupID: s.cg[name], VictimComm: comm})
}

// A child killed by the OOM killer while the container's init goes on is an
// event on the run, not its cause: the run ends later for its own reason
// (here a graceful stop), even though the runtime reports OOMKilled.
func TestOOMKillOfAChildIsNotTheRunsCause(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	child := s.exec("app", app, "dd", "bs=256M")
	s.at(100 * time.Millisecond)
	s.oomKill("app", child, "dd")
	s.exit("app", child, 0, syscall.SIGKILL)
	s.at(5 * time.Second)
	grace := int64(30)
	del := s.now.Add(time.Duration(grace) * time.Second)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.signal("app", app, syscall.SIGTERM, "runc", probe.SignalDelivered, probe.DispositionHandler)
	s.at(20 * time.Millisecond)
	s.exit("app", app, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "OOMKilled")
	s.info.Deleted = true
	s.pod()
	s.tick(3 * time.Second)
	run := s.one("container.run")
	if run.Attr("podtrace.exit.cause") != "completed" || run.Status == correlate.StatusError {
		t.Errorf("run: %s %v", run.Status, run.Attrs)
	}
	var ev *correlate.SpanEvent
	for i := range run.Events {
		if run.Events[i].Name == "oom_kill" {
			ev = &run.Events[i]
		}
	}
	if ev == nil {
		t.Fatalf("no oom_kill event on the run: %+v", run.Events)
	}
	attrs := map[string]any{}
	for _, a := range ev.Attrs {
		attrs[a.Key] = a.Value
	}
	if attrs["podtrace.oom.victim.pid"] != int64(child) || attrs["podtrace.oom.victim.comm"] != "dd" {
		t.Errorf("oom_kill event: %v", ev.Attrs)
	}
}

// Without the kernel's view of the OOM kill (lost, or before the tracer),
// the runtime's OOMKilled still names the cause.
func TestOOMKilledFromTheRuntimeAlone(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "OOMKilled")
	s.tick(3 * time.Second)
	if got := s.one("container.run").Attr("podtrace.exit.cause"); got != "oom_killed" {
		t.Errorf("cause %v, want oom_killed", got)
	}
}
