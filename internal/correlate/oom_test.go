package correlate_test

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

func (s *sim) oomKill(name string, victim uint32, comm string, memcgs ...kernel.MemcgOOMs) {
	s.kernel(&kernel.OOMEvent{Header: kernel.Header{Type: kernel.EventOOMKill, Origin: kernel.OriginTarget, TGID: victim, PID: victim, CgroupID: s.cg[name]},
		VictimTGID: victim, VictimKnown: true, VictimCgroupID: s.cg[name], VictimComm: comm, Memcgs: memcgs})
}

// memcgs is the sim's memory cgroup chain as the probe reads it for a task
// of the container (/kubepods/burstable/pod<uid>/<id>, level 4) with these
// local OOM counts, the container's first.
func memcgs(container, pod, burstable, kubepods, root uint64) []kernel.MemcgOOMs {
	return []kernel.MemcgOOMs{{ID: 71, Level: 4, OOMs: container}, {ID: 72, Level: 3, OOMs: pod},
		{ID: 73, Level: 2, OOMs: burstable}, {ID: 74, Level: 1, OOMs: kubepods}, {ID: 1, Level: 0, OOMs: root}}
}

// The scope of an OOM kill is the memory cgroup whose own OOM count grew
// (the kernel counts the cgroup whose limit was hit), whatever limits the
// runtime reported; node-wide when none grew. Counts are compared with the
// last ones seen: a pod-level count left from an earlier kill does not make
// a later container-level kill a pod one.
func TestOOMScopeFromTheKernelsCounters(t *testing.T) {
	type kill struct {
		memcgs    []kernel.MemcgOOMs
		scope     string
		memcgPath string // "" for none; "container"/"pod" for the sim's paths
	}
	for _, tc := range []struct {
		name  string
		kills []kill
	}{
		{"container limit", []kill{{memcgs(1, 0, 0, 0, 0), "container", "container"}}},
		{"pod limit", []kill{{memcgs(0, 1, 0, 0, 0), "pod", "pod"}}},
		{"node allocatable", []kill{{memcgs(0, 0, 0, 1, 0), "node_allocatable", "/kubepods"}}},
		{"qos cgroup", []kill{{memcgs(0, 0, 1, 0, 0), "node_allocatable", "/kubepods/burstable"}}},
		{"node", []kill{{memcgs(0, 0, 0, 0, 0), "node", ""}}},
		{"no memory controller", []kill{{nil, "unknown", ""}}},
		{"pod then container", []kill{{memcgs(0, 1, 0, 0, 0), "pod", "pod"}, {memcgs(1, 1, 0, 0, 0), "container", "container"}}},
		{"container then pod", []kill{{memcgs(1, 0, 0, 0, 0), "container", "container"}, {memcgs(1, 1, 0, 0, 0), "pod", "pod"}}},
		{"pod twice", []kill{{memcgs(0, 1, 0, 0, 0), "pod", "pod"}, {memcgs(0, 2, 0, 0, 0), "pod", "pod"}}},
		{"pod then node", []kill{{memcgs(0, 1, 0, 0, 0), "pod", "pod"}, {memcgs(0, 1, 0, 0, 0), "node", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			paths := map[string]string{"container": "/kubepods/burstable/pod" + s.uid + "/" + s.ids["app"], "pod": "/kubepods/burstable/pod" + s.uid}
			var children []uint32
			for _, k := range tc.kills {
				s.at(time.Second)
				child := s.exec("app", app, "dd", "bs=256M")
				s.oomKill("app", child, "dd", k.memcgs...)
				s.exit("app", child, 0, syscall.SIGKILL)
				children = append(children, child)
			}
			s.at(time.Second)
			s.exit("app", app, 0, 0)
			s.cri(cri.EventContainerExited, "app", 0, "Completed")
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			var got []map[string]any
			for _, ev := range run.Events {
				if ev.Name == names.EventOOMKill {
					m := map[string]any{}
					for _, a := range ev.Attrs {
						m[a.Key] = a.Value
					}
					got = append(got, m)
				}
			}
			if len(got) != len(tc.kills) {
				t.Fatalf("%d oom_kill events, want %d: %+v", len(got), len(tc.kills), run.Events)
			}
			for i, k := range tc.kills {
				want := k.memcgPath
				if p, ok := paths[want]; ok {
					want = p
				}
				memcg, _ := got[i][names.OOMMemcg].(string)
				if got[i][names.OOMScope] != k.scope || memcg != want || got[i][names.OOMVictimPID] != int64(children[i]) {
					t.Errorf("kill %d: scope %v memcg %q pid %v, want %s %q %d", i, got[i][names.OOMScope], memcg, got[i][names.OOMVictimPID], k.scope, want, children[i])
				}
				if c := "oom shop " + k.scope; !slices.Contains(s.o.calls, c) {
					t.Errorf("metric: no %q in %v", c, s.o.calls)
				}
			}
		})
	}
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
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.at(20 * time.Millisecond)
	s.exit("app", app, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "OOMKilled")
	s.info.Deleted = true
	s.pod()
	s.tick(3 * time.Second)
	run := s.one(names.SpanContainerRun)
	if run.Attr(names.ExitCause) != "completed" || run.Status == span.StatusError {
		t.Errorf("run: %s %v", run.Status, run.Attrs)
	}
	var ev *span.SpanEvent
	for i := range run.Events {
		if run.Events[i].Name == names.EventOOMKill {
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
	if attrs[names.OOMVictimPID] != int64(child) || attrs[names.OOMVictimComm] != "dd" {
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
	if got := s.one(names.SpanContainerRun).Attr(names.ExitCause); got != "oom_killed" {
		t.Errorf("cause %v, want oom_killed", got)
	}
}

// An OOM kill whose victim no known container holds (it was dying already:
// no SIGKILL named it) is placed from the task the OOM killer ran in: when
// the limit that ran out is that task's container's, the kill is an event
// on its run; when it is its pod's, the pod's root tells the miss and the
// pod's namespace counts the kill.
func TestOOMKillOfAnUnnamedVictimIsPlacedByTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		memcgs []kernel.MemcgOOMs
		scope  string
		onRun  bool
	}{
		{"container limit", memcgs(1, 0, 0, 0, 0), "container", true},
		{"pod limit", memcgs(0, 1, 0, 0, 0), "pod", false},
		{"node", memcgs(0, 0, 0, 0, 0), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(time.Second)
			// The allocating task is the init; the victim, pid 9999, was
			// never reported and its SIGKILL not seen.
			s.kernel(&kernel.OOMEvent{Header: kernel.Header{Type: kernel.EventOOMKill, TGID: app, PID: app, CgroupID: s.cg["app"]},
				VictimTGID: 9999, VictimComm: "worker", Memcgs: tc.memcgs})
			s.at(time.Second)
			s.exit("app", app, 0, 0)
			s.cri(cri.EventContainerExited, "app", 0, "Completed")
			s.info.Deleted = true
			s.pod()
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			var onRun, onRoot bool
			for _, ev := range run.Events {
				onRun = onRun || ev.Name == names.EventOOMKill
			}
			for _, ev := range s.one(names.SpanPod).Events {
				for _, a := range ev.Attrs {
					onRoot = onRoot || ev.Name == names.EventCorrelationMiss && a.Key == names.MissReasonKey && a.Value == string(names.MissOOMUnknownVictim)
				}
			}
			if onRun != tc.onRun || onRoot != (tc.scope == "pod") {
				t.Errorf("oom_kill on the run %v (want %v), miss on the root %v (want %v)", onRun, tc.onRun, onRoot, tc.scope == "pod")
			}
			counted := slices.ContainsFunc(s.o.calls, func(c string) bool { return strings.HasPrefix(c, "oom ") })
			if want := "oom shop " + tc.scope; tc.scope != "" && !slices.Contains(s.o.calls, want) || tc.scope == "" && counted {
				t.Errorf("metric calls %v, want %q", s.o.calls, want)
			}
			if run.Attr(names.ExitCause) != "completed" {
				t.Errorf("run: %v", run.Attrs)
			}
		})
	}
}
