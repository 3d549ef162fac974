package correlate_test

import (
	"hash/fnv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
)

// OOM group kills (memory.oom.group=1, which the kubelet sets on every
// container on cgroup v2): one OOM invocation kills every process of the
// group. The kernel counts the OOM once on the cgroup whose limit ran out,
// but oom/mark_victim fires for each victim, always in the context of the
// task that hit the limit (the header), whose memory cgroups and counts the
// probe reads. Every victim of that invocation must take the first one's
// scope; a node-wide OOM right after must still be node.

// cgShape is a kubelet cgroup layout: the pod's and a container's cgroup
// path (as the cgroupid tests spell them).
type cgShape struct {
	name      string
	pod       func(uid string) string
	container func(uid, cid string) string
}

var cgShapes = []cgShape{
	{"cgroupfs burstable (v1 shape)",
		func(uid string) string { return "/kubepods/burstable/pod" + uid },
		func(uid, cid string) string { return "/kubepods/burstable/pod" + uid + "/" + cid }},
	{"cgroupfs guaranteed (v1 shape)",
		func(uid string) string { return "/kubepods/pod" + uid },
		func(uid, cid string) string { return "/kubepods/pod" + uid + "/" + cid }},
	{"systemd burstable (v2 shape)",
		func(uid string) string {
			return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
		},
		func(uid, cid string) string {
			return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") +
				".slice/cri-containerd-" + cid + ".scope"
		}},
	{"systemd guaranteed (v2 shape)",
		func(uid string) string {
			return "/kubepods.slice/kubepods-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
		},
		func(uid, cid string) string {
			return "/kubepods.slice/kubepods-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice/cri-containerd-" + cid + ".scope"
		}},
}

const (
	appCID  = "bddf098292d7a277c89fecad52c94ef99f3209b11ea21f40616f64b3447da687"
	sideCID = "c1d453877d4905eac27d78399aaf2c140d779543de35c699012729ac464c0cf8"
)

// groupPod starts a pod with two containers, app and side, in the shape's
// cgroups; it returns the containers' cgroup paths.
func (s *sim) groupPod(sh cgShape) map[string]string {
	s.info.InitContainers = nil
	s.info.Containers = []fact.ContainerSpec{{Name: "app"}, {Name: "side"}}
	s.pod()
	s.mkdir(8000, sh.pod(s.uid))
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now,
		Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: s.info.Name, PodNamespace: s.info.Namespace, CreatedAt: s.now}}})
	paths := map[string]string{"pod": sh.pod(s.uid)}
	for i, ct := range []struct{ name, id string }{{"app", appCID}, {"side", sideCID}} {
		s.at(10 * time.Millisecond)
		cgid := uint64(9001 + i)
		s.cg[ct.name], s.ids[ct.name] = cgid, ct.id
		paths[ct.name] = sh.container(s.uid, ct.id)
		s.mkdir(cgid, paths[ct.name])
		s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
			Container: &cri.Container{ID: ct.id, SandboxID: "sb1", Name: ct.name, PodUID: s.uid, CreatedAt: s.now}}})
		s.exec(ct.name, 1, "/app", ct.name)
		s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerStarted, At: s.now,
			Container: &cri.Container{ID: ct.id, SandboxID: "sb1", Name: ct.name, PodUID: s.uid, StartedAt: s.now}}})
	}
	return paths
}

// memcgChain is what the probe reads for a task in the cgroup at path: its
// memory cgroup and every ancestor up to the root, each with the count
// given for its path in ooms (0 when not given).
func memcgChain(path string, ooms map[string]uint64) []kernel.MemcgOOMs {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var out []kernel.MemcgOOMs
	for l := len(parts); l >= 1; l-- {
		p := "/" + strings.Join(parts[:l], "/")
		h := fnv.New64a()
		h.Write([]byte(p))
		out = append(out, kernel.MemcgOOMs{ID: h.Sum64() | 1<<62, Level: uint32(l), OOMs: ooms[p]})
	}
	return append(out, kernel.MemcgOOMs{ID: 1, Level: 0, OOMs: ooms["/"]})
}

// markVictim is one oom/mark_victim: the OOM killer ran in cur's context
// (a task of the container curCt, or of no container when curCt is "") and
// killed victim; the probe knows the victim's cgroup only when it is cur.
func (s *sim) markVictim(curCt string, cur, victim uint32, chain []kernel.MemcgOOMs) {
	e := &kernel.OOMEvent{Header: kernel.Header{Type: kernel.EventOOMKill, CgroupID: s.cg[curCt], TGID: cur, PID: cur, Comm: "alloc"},
		VictimTGID: victim, VictimComm: "x", Memcgs: chain}
	if cur == victim && curCt != "" {
		e.Origin = kernel.OriginTarget
		e.VictimKnown, e.VictimCgroupID = true, s.cg[curCt]
	}
	s.kernel(e)
}

type oomSeen struct {
	pid          uint32
	scope, memcg string
}

// oomKillsSeen: the OOM kills on a container's run, in order.
func (s *sim) oomKillsSeen(ctName string) []oomSeen {
	s.t.Helper()
	var out []oomSeen
	for _, sp := range s.find(names.SpanContainerRun) {
		if sp.Attr(names.K8sContainerName) != ctName {
			continue
		}
		for _, ev := range sp.Events {
			if ev.Name != names.EventOOMKill {
				continue
			}
			var o oomSeen
			for _, a := range ev.Attrs {
				switch a.Key {
				case names.OOMVictimPID:
					o.pid = uint32(a.Value.(int64))
				case names.OOMScope:
					o.scope = a.Value.(string)
				case names.OOMMemcg:
					o.memcg = a.Value.(string)
				}
			}
			out = append(out, o)
		}
	}
	return out
}

func (s *sim) oomMetric(scope string) int {
	return s.o.count("oom shop " + scope)
}

// groupKill: the app container's init and two children, one invocation
// started by child1 hitting the limit of the cgroup at limitPath (its count
// rises once): child1 first (the chosen victim), then the init and child2
// (the rest of the group).
func (s *sim) groupKill(paths map[string]string, limitPath string) (init, child1, child2 uint32) {
	init = s.pid - 1 // app's init: groupPod started app then side
	s.at(time.Second)
	child1 = s.exec("app", init, "alloc")
	child2 = s.exec("app", init, "worker")
	s.at(time.Second)
	chain := memcgChain(paths["app"], map[string]uint64{limitPath: 1})
	for _, v := range []uint32{child1, init, child2} {
		s.markVictim("app", child1, v, chain)
		s.at(40 * time.Microsecond)
	}
	return init, child1, child2
}

func (s *sim) endApp(init, child1, child2 uint32) {
	s.at(time.Millisecond)
	for _, v := range []uint32{child1, child2, init} {
		s.exit("app", v, 0, syscall.SIGKILL)
	}
	s.cri(cri.EventContainerExited, "app", 137, "OOMKilled")
	s.tick(3 * time.Second)
}

func TestOOMGroupKillVictimsTakeTheFirstVictimsScope(t *testing.T) {
	for _, sh := range cgShapes {
		for _, limit := range []string{"container", "pod"} {
			t.Run(sh.name+"/"+limit+" limit", func(t *testing.T) {
				s := newSim(t)
				paths := s.groupPod(sh)
				limitPath := paths[limit]
				if limit == "container" {
					limitPath = paths["app"]
				}
				init, child1, child2 := s.groupKill(paths, limitPath)
				s.endApp(init, child1, child2)
				got := s.oomKillsSeen("app")
				want := []oomSeen{{child1, limit, limitPath}, {init, limit, limitPath}, {child2, limit, limitPath}}
				if len(got) != len(want) {
					t.Fatalf("oom kills %+v, want %+v", got, want)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("kill %d: %+v, want %+v", i, got[i], want[i])
					}
				}
				run := s.one(names.SpanContainerRun)
				if run.Attr(names.ExitCause) != "oom_killed" || run.Attr(names.OOMScope) != limit || run.Attr(names.OOMMemcg) != limitPath {
					t.Errorf("run: cause %v scope %v memcg %v, want oom_killed %s %s", run.Attr(names.ExitCause),
						run.Attr(names.OOMScope), run.Attr(names.OOMMemcg), limit, limitPath)
				}
				if n, node := s.oomMetric(limit), s.oomMetric("node"); n != 3 || node != 0 {
					t.Errorf("metric: %d %s and %d node OOM kills, want 3 and 0: %v", n, limit, node, s.o.calls)
				}
			})
		}
	}
}

// A node-wide OOM (no count grew anywhere) right after a group kill is its
// own invocation, in another task's context: node, even when its victim is
// inside the cgroup whose limit ran out just before (the pod's).
func TestOOMGroupKillThenANodeOOM(t *testing.T) {
	for _, sh := range cgShapes {
		for _, tc := range []struct {
			limit string
			cur   string // the container of the task the node OOM runs in; "" outside the pods
		}{{"container", "side"}, {"pod", "side"}, {"container", ""}, {"pod", ""}} {
			from := tc.cur
			if from == "" {
				from = "a system service"
			}
			t.Run(sh.name+"/"+tc.limit+" limit, node OOM from "+from, func(t *testing.T) {
				s := newSim(t)
				paths := s.groupPod(sh)
				limitPath := paths[tc.limit]
				if tc.limit == "container" {
					limitPath = paths["app"]
				}
				sideInit := s.pid
				init, child1, child2 := s.groupKill(paths, limitPath)
				// The node OOM: the same counts as before (none grew).
				s.at(200 * time.Microsecond)
				cur, chain := sideInit, memcgChain(paths["side"], map[string]uint64{limitPath: 1})
				if tc.cur == "" {
					cur, chain = 300, memcgChain("/system.slice/backup.service", map[string]uint64{limitPath: 1})
				}
				s.markVictim(tc.cur, cur, sideInit, chain)
				s.endApp(init, child1, child2)
				s.exit("side", sideInit, 0, syscall.SIGKILL)
				s.cri(cri.EventContainerExited, "side", 137, "OOMKilled")
				s.tick(3 * time.Second)
				if got := s.oomKillsSeen("app"); len(got) != 3 || got[1].scope != tc.limit || got[2].scope != tc.limit {
					t.Errorf("app's kills %+v, want 3 of scope %s", got, tc.limit)
				}
				got := s.oomKillsSeen("side")
				if len(got) != 1 || got[0] != (oomSeen{sideInit, "node", ""}) {
					t.Errorf("side's kill %+v, want node", got)
				}
				if n, node := s.oomMetric(tc.limit), s.oomMetric("node"); n != 3 || node != 1 {
					t.Errorf("metric: %d %s and %d node OOM kills, want 3 and 1: %v", n, tc.limit, node, s.o.calls)
				}
			})
		}
	}
}

// The task that hit the container's limit need not be among the victims
// (on cgroup v1, or with the group off, the kernel kills the biggest task
// only). When that task then runs the kernel into a node-wide OOM, its event
// reads the same counts as the container's kill: the victim, outside the
// container whose limit ran out, is what makes it node.
func TestOOMNodeOOMFromTheSameTaskOutsideTheLimit(t *testing.T) {
	for _, sh := range cgShapes {
		t.Run(sh.name, func(t *testing.T) {
			s := newSim(t)
			paths := s.groupPod(sh)
			init, sideInit := s.pid-1, s.pid
			s.at(time.Second)
			alloc := s.exec("app", init, "alloc")
			s.at(time.Second)
			chain := memcgChain(paths["app"], map[string]uint64{paths["app"]: 1})
			s.markVictim("app", alloc, init, chain)
			s.at(200 * time.Microsecond)
			s.markVictim("app", alloc, sideInit, chain)
			s.at(time.Millisecond)
			s.exit("app", init, 0, syscall.SIGKILL)
			s.exit("side", sideInit, 0, syscall.SIGKILL)
			s.tick(3 * time.Second)
			if got := s.oomKillsSeen("app"); len(got) != 1 || got[0] != (oomSeen{init, "container", paths["app"]}) {
				t.Errorf("app's kill %+v, want container", got)
			}
			if got := s.oomKillsSeen("side"); len(got) != 1 || got[0] != (oomSeen{sideInit, "node", ""}) {
				t.Errorf("side's kill %+v, want node", got)
			}
		})
	}
}

// A second kill from the same surviving task with the same counts, inside
// the container, but long after the first: not the same invocation (a
// node-wide OOM), node.
func TestOOMSameCountsLongAfterIsNode(t *testing.T) {
	s := newSim(t)
	paths := s.groupPod(cgShapes[2])
	init := s.pid - 1
	s.at(time.Second)
	alloc := s.exec("app", init, "alloc")
	other := s.exec("app", init, "worker")
	chain := memcgChain(paths["app"], map[string]uint64{paths["app"]: 1})
	s.markVictim("app", alloc, init, chain)
	s.at(2 * time.Second)
	s.markVictim("app", alloc, other, chain)
	s.at(time.Millisecond)
	s.exit("app", init, 0, syscall.SIGKILL)
	s.exit("app", other, 0, syscall.SIGKILL)
	s.exit("app", alloc, 0, syscall.SIGKILL)
	s.tick(3 * time.Second)
	want := []oomSeen{{init, "container", paths["app"]}, {other, "node", ""}}
	if got := s.oomKillsSeen("app"); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("kills %+v, want %+v", got, want)
	}
}

// A group kill as a real kernel makes it (6.12, seen in the podchron VM's
// pure cgroup v2 node, make test-vm-node): the container's init (a shell
// exec'd into dd) hits the container's limit and is the chosen victim, then
// the group's loop kills the rest: a background process the shell forked,
// which the probes never reported (the in-kernel filter reports only a
// container's process roots). Its mark_victim carries only its pid and
// comm; the task the OOM killer runs in is the init. The limit that ran out
// is the container's, so every victim of that invocation is in the
// container: the unknown victim is the container's too, with the same
// scope, and is counted.
func TestOOMGroupKillOfAProcessNeverSeen(t *testing.T) {
	for _, sh := range cgShapes {
		t.Run(sh.name, func(t *testing.T) {
			s := newSim(t)
			paths := s.groupPod(sh)
			init := s.pid - 1 // app's init
			const bg = 4242   // forked in the container below the init: never reported
			s.at(2 * time.Second)
			chain := memcgChain(paths["app"], map[string]uint64{paths["app"]: 1})
			s.markVictim("app", init, init, chain)
			s.at(40 * time.Microsecond)
			s.markVictim("app", init, bg, chain)
			s.at(time.Millisecond)
			s.exit("app", init, 0, syscall.SIGKILL)
			s.cri(cri.EventContainerExited, "app", 137, "OOMKilled")
			s.tick(3 * time.Second)
			want := []oomSeen{{init, "container", paths["app"]}, {bg, "container", paths["app"]}}
			got := s.oomKillsSeen("app")
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
				t.Errorf("oom kills %+v, want %+v", got, want)
			}
			if n := s.oomMetric("container"); n != 2 {
				t.Errorf("metric: %d container OOM kills, want 2: %v", n, s.o.calls)
			}
			if m := s.c.Stats().Misses["oom_unknown_victim"]; m != 0 {
				t.Errorf("oom_unknown_victim misses %d, want 0", m)
			}
		})
	}
}

// An unknown victim of an invocation whose limit was the pod's (or above)
// cannot be placed: the group the kernel killed is below that cgroup, in
// any of its containers. It stays a miss, counted, on no container.
func TestOOMUnknownVictimOfAPodLimitStaysUnplaced(t *testing.T) {
	s := newSim(t)
	paths := s.groupPod(cgShapes[2])
	init := s.pid - 1
	s.at(2 * time.Second)
	chain := memcgChain(paths["app"], map[string]uint64{paths["pod"]: 1})
	s.markVictim("app", init, init, chain)
	s.at(40 * time.Microsecond)
	s.markVictim("app", init, 4242, chain)
	s.at(time.Millisecond)
	s.exit("app", init, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "OOMKilled")
	s.tick(3 * time.Second)
	if got := s.oomKillsSeen("app"); len(got) != 1 || got[0] != (oomSeen{init, "pod", paths["pod"]}) {
		t.Errorf("app's kills %+v, want the init's only, scope pod", got)
	}
	if got := s.oomKillsSeen("side"); len(got) != 0 {
		t.Errorf("side's kills %+v, want none", got)
	}
	if m := s.c.Stats().Misses["oom_unknown_victim"]; m != 1 {
		t.Errorf("oom_unknown_victim misses %d, want 1", m)
	}
}
