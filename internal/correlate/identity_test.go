package correlate_test

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact/cri"
)

// How runtimes bootstrap a container, as the kernel reports it (see
// shared notes runtimes.md and identity.go). Each step is an exec or fork in
// the container's cgroup; pids are symbolic (A, B: the runtime's set-up
// processes; I: the process that becomes the container's PID 1).
type bootStep struct {
	fork     bool   // fork parent -> pid (else exec by pid)
	parent   string // for forks, and the exec's ppid
	pid      string
	filename string
	comm     string
	args     []string
	exit     bool // the set-up process exits (code 0)
}

var bootstraps = map[string][]bootStep{
	// Debian's runc 1.1.5+ds1-1+deb12u1: runc init re-executed through
	// /proc/self/exe, then from a sealed memfd by execveat (/dev/fd/6);
	// nsexec's stages fork twice; the last one execs the command.
	"runc-debian-1.1.5": {
		{pid: "A", parent: "runtime", filename: "/proc/self/exe", comm: "exe", args: []string{"/usr/sbin/runc", "init"}},
		{pid: "A", parent: "runtime", filename: "/dev/fd/6", comm: "runc", args: []string{"/usr/sbin/runc", "init"}},
		{fork: true, parent: "A", pid: "B"},
		{fork: true, parent: "B", pid: "I"},
		{pid: "B", exit: true},
		{pid: "A", exit: true},
		{pid: "I", parent: "B", filename: "/bin/sleep", comm: "sleep", args: []string{"sleep", "1000"}},
	},
	// Upstream runc 1.3: execveat of a cloned binary through /proc/self/fd/6,
	// comm "6".
	"runc-upstream-1.3": {
		{pid: "A", parent: "runtime", filename: "/proc/self/fd/6", comm: "6", args: []string{"/root/.cache/podchron/runc/v1.3.3/runc", "init"}},
		{fork: true, parent: "A", pid: "B"},
		{fork: true, parent: "B", pid: "I"},
		{pid: "A", exit: true},
		{pid: "B", exit: true},
		{pid: "I", parent: "B", filename: "/bin/sleep", comm: "sleep", args: []string{"sleep", "1000"}},
	},
	// crun: the runtime forks the container process outside the cgroup;
	// the first exec inside it is the command.
	"crun-1.8.1": {
		{pid: "I", parent: "runtime", filename: "/bin/sleep", comm: "sleep", args: []string{"sleep", "1000"}},
	},
	// busybox's applets exec through /proc/self/exe: not a runtime.
	"busybox-applet": {
		{pid: "I", parent: "runtime", filename: "/proc/self/exe", comm: "exe", args: []string{"sleep", "1000"}},
	},
	// A runtime this code has never heard of, bootstrapping through an fd:
	// the kernel chain is fooled; the runtime's facts correct it.
	"unknown-runtime": {
		{pid: "A", parent: "runtime", filename: "/dev/fd/5", comm: "5", args: []string{"/usr/libexec/newrt", "bootstrap"}},
		{fork: true, parent: "A", pid: "I"},
		{pid: "A", exit: true},
		{pid: "I", parent: "A", filename: "/bin/sleep", comm: "sleep", args: []string{"sleep", "1000"}},
	},
}

// TestContainerInitAcrossRuntimes: whatever the runtime's bootstrap, the run
// is the configured command's process, from its exec to its exit; the
// runtime's set-up processes are never runs. The runtime's facts (PID,
// configured argv) arrive before the kernel's, after them, or never.
func TestContainerInitAcrossRuntimes(t *testing.T) {
	cmd := []string{"sleep", "1000"}
	for name, steps := range bootstraps {
		for _, criView := range []string{"before", "after", "args-only", "none"} {
			if name == "unknown-runtime" && criView == "none" {
				continue // nothing can tell it without the runtime: documented
			}
			t.Run(name+"/cri-"+criView, func(t *testing.T) {
				s := newSim(t)
				s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
				s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now,
					Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
				s.at(50 * time.Millisecond)
				const id = "c0ffee99"
				s.cg["app"] = 9100
				s.ids["app"] = id
				s.mkdir(9100, "/kubepods/burstable/pod"+s.uid+"/"+id)
				pids := map[string]uint32{"runtime": 3000}
				pidOf := func(k string) uint32 {
					if _, ok := pids[k]; !ok {
						s.pid++
						pids[k] = s.pid
					}
					return pids[k]
				}
				for _, k := range []string{"A", "B", "I"} {
					pidOf(k)
				}
				ctr := func(typ cri.EventType, withPID bool) {
					c := &cri.Container{ID: id, SandboxID: "sb1", Name: "app", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop",
						CreatedAt: s.now, StartedAt: s.now}
					if criView != "none" {
						c.Args = cmd
					}
					if withPID && (criView == "before" || criView == "after") {
						c.PID = int(pids["I"])
					}
					s.in(fact.Input{Runtime: &cri.Event{Type: typ, At: s.now, Container: c}})
				}
				if criView == "before" || criView == "args-only" {
					ctr(cri.EventContainerCreated, true)
				}
				var initExec time.Time
				for _, st := range steps {
					s.at(2 * time.Millisecond)
					switch {
					case st.fork:
						s.kernel(&kernel.ForkEvent{Header: kernel.Header{Type: kernel.EventFork, Origin: kernel.OriginWatched, CgroupID: 9100,
							TGID: pidOf(st.parent), PID: pidOf(st.parent)}, ChildTGID: pidOf(st.pid), ChildPID: pidOf(st.pid)})
					case st.exit:
						s.exit("app", pidOf(st.pid), 0, 0)
					default:
						if st.pid == "I" {
							initExec = s.now
						}
						s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: 9100,
							TGID: pidOf(st.pid), PID: pidOf(st.pid), PPID: pidOf(st.parent), Comm: st.comm}, Filename: st.filename, Args: st.args})
					}
				}
				s.at(5 * time.Millisecond)
				if criView == "after" || criView == "none" {
					ctr(cri.EventContainerCreated, true)
				}
				ctr(cri.EventContainerStarted, true)
				s.tick(3 * time.Second)
				// The stop: SIGTERM ignored, SIGKILL at the timeout.
				s.signal("app", pids["I"], syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionIgnored)
				s.at(2 * time.Second)
				s.signal("app", pids["I"], syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
				s.exit("app", pids["I"], 0, syscall.SIGKILL)
				exitAt := s.now
				s.cri(cri.EventContainerExited, "app", 137, "Error")
				s.tick(3 * time.Second)

				run := s.one(names.SpanContainerRun)
				if got := run.Attr(names.ProcessPID); got != int64(pids["I"]) {
					t.Errorf("run's pid %v, want the command's %d (bootstrap A=%d B=%d)", got, pids["I"], pids["A"], pids["B"])
				}
				if got, _ := run.Attr(names.ProcessCommandArgs).([]string); !slices.Equal(got, cmd) {
					t.Errorf("run's argv %q, want %q", got, cmd)
				}
				// (A run starts at the earliest of the container's creation,
				// its cgroup and its init's exec: the set-up is part of it.)
				if run.Start.After(initExec) || !run.End.Equal(exitAt) {
					t.Errorf("run %s–%s, want it to span the command's exec %s to its exit %s", run.Start, run.End, initExec, exitAt)
				}
				if got := run.Attr(names.ExitCause); got != "killed_by_runtime" {
					t.Errorf("cause %v, want killed_by_runtime", got)
				}
				if stop := s.find(names.SpanContainerStop); len(stop) != 1 || stop[0].Attr(names.SignalDisposition) != "ignored" {
					t.Errorf("stop spans: %+v", stop)
				}
			})
		}
	}
}

// A container whose own command is a runtime binary (say a CI image running
// runc): the runtime's PID names it, whatever its argv looks like.
func TestContainerRunningARuntimeBinary(t *testing.T) {
	s := newSim(t)
	s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now,
		Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "ci", PodNamespace: "build", CreatedAt: s.now}}})
	s.cg["app"] = 9100
	s.ids["app"] = "c0ffee98"
	s.mkdir(9100, "/kubepods/burstable/pod"+s.uid+"/c0ffee98")
	s.pid++
	pid := s.pid
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now, Container: &cri.Container{ID: "c0ffee98",
		SandboxID: "sb1", Name: "app", PodUID: s.uid, CreatedAt: s.now, PID: int(pid), Args: []string{"runc", "--version"}}}})
	s.at(10 * time.Millisecond)
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: 9100, TGID: pid, PID: pid, PPID: 3000, Comm: "runc"},
		Filename: "/usr/bin/runc", Args: []string{"runc", "--version"}})
	s.at(10 * time.Millisecond)
	s.exit("app", pid, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.tick(3 * time.Second)
	run := s.one(names.SpanContainerRun)
	if run.Attr(names.ProcessPID) != int64(pid) || run.Attr(names.ExitCause) != "completed" {
		t.Errorf("run: %v", run.Attrs)
	}
}

// A process inside the pod is the pod's, whatever its comm: a binary called
// runc or kubelet in a sibling container does not pass for the runtime or
// the kubelet (the kernel's runtime flag is a comm match).
func TestSenderIdentityNotSpoofedByComm(t *testing.T) {
	for _, comm := range []string{"app", "runc", "kubelet", "containerd-shim"} {
		t.Run(comm, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			side := s.container("sidecar", "c0ffee03", 0)
			s.at(time.Second)
			s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget | kernel.OriginRuntime,
				TGID: side, PID: side, Comm: comm, CgroupID: s.cg["sidecar"]},
				Signal: syscall.SIGKILL, Code: kernel.SIUser, Result: kernel.SignalDelivered, Disposition: kernel.DispositionDefault,
				TargetTGID: app, TargetPID: app, TargetCgroupID: s.cg["app"], TargetNSInit: true})
			s.exit("app", app, 0, syscall.SIGKILL)
			s.cri(cri.EventContainerExited, "app", 137, "Error")
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			if run.Attr(names.ExitCause) != "killed_in_pod" || run.Attr(names.SignalSenderKind) != "in_pod" {
				t.Errorf("a SIGKILL from %q in a sibling container: %v", comm, run.Attrs)
			}
		})
	}
}

// An Event speaks for a pod only from the pod's own namespace: whoever may
// create Events in another namespace can name any pod's UID.
func TestEventFromAnotherNamespaceIgnored(t *testing.T) {
	for ns, want := range map[string]string{"shop": "liveness_restart", "attacker": "completed"} {
		t.Run(ns, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(time.Second)
			s.in(fact.Input{Event: &fact.K8sEvent{UID: "ev-kill", PodUID: s.uid, Namespace: ns, Reason: "Killing", Container: "app",
				Message: "Container app failed liveness probe, will be restarted", FirstTime: s.now, LastTime: s.now, Count: 1}})
			s.at(10 * time.Millisecond)
			s.gracefulStop("app", app, 30*time.Millisecond)
			s.tick(12 * time.Second) // past the wait for the kubelet's word on a stop with no termination (kubelet_kill.go)
			if got := s.one(names.SpanContainerRun).Attr(names.ExitCause); got != want {
				t.Errorf("Killing event from namespace %q: cause %v, want %s", ns, got, want)
			}
		})
	}
}

// A tracer starting mid-life finds the container's processes by scanning
// /proc in PID order; PIDs wrap, so a child can come before its parent. The
// init is the one whose parent is outside the container.
func TestStartupScanPicksInitByTree(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	podPath := "/kubepods/burstable/pod" + s.uid
	s.in(fact.Input{Cgroup: &fact.CgroupSeen{ID: 8000, Path: podPath}})
	s.in(fact.Input{Cgroup: &fact.CgroupSeen{ID: 9100, Path: podPath + "/c0ffee97"}})
	s.cg["app"], s.ids["app"] = 9100, "c0ffee97"
	started := s.now.Add(-time.Hour)
	// PID order: the worker (child, after a wrap) first, then the init, then
	// the worker's own child.
	for _, ps := range []fact.ProcSeen{
		{PID: 210, PPID: 35000, CgroupID: 9100, Comm: "worker", Args: []string{"worker"}, Started: started.Add(time.Minute)},
		{PID: 35000, PPID: 3000, CgroupID: 9100, Comm: "supervisor", Args: []string{"supervisor", "--serve"}, Started: started},
		{PID: 36000, PPID: 210, CgroupID: 9100, Comm: "sh", Args: []string{"sh"}, Started: started.Add(2 * time.Minute)},
	} {
		s.in(fact.Input{Proc: &ps})
	}
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now, Container: &cri.Container{ID: "c0ffee97",
		SandboxID: "sb1", Name: "app", PodUID: s.uid, CreatedAt: started, StartedAt: started}}})
	s.at(time.Second)
	s.exit("app", 36000, 0, 0)
	s.exit("app", 210, 0, 0)
	s.tick(3 * time.Second)
	if n := len(s.find(names.SpanContainerRun)); n != 0 {
		t.Fatalf("children's exits ended the run (%d runs)", n)
	}
	s.exit("app", 35000, 2, 0)
	s.cri(cri.EventContainerExited, "app", 2, "Error")
	s.tick(3 * time.Second)
	run := s.one(names.SpanContainerRun)
	if run.Attr(names.ProcessPID) != int64(35000) || run.Attr(names.ProcessExitCode) != int64(2) {
		t.Errorf("run: %v", run.Attrs)
	}
}

// A tracer starting while the runtime sets a container up finds its
// bootstrap ("runc init", runc's nsexec stages) in the container's cgroup:
// that is not the init, whose exec comes next. The bootstrap's exit does
// not end the container; the command it execs is the init.
func TestStartupScanSkipsRuntimeBootstrap(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	podPath := "/kubepods/burstable/pod" + s.uid
	s.in(fact.Input{Cgroup: &fact.CgroupSeen{ID: 8000, Path: podPath}})
	s.in(fact.Input{Cgroup: &fact.CgroupSeen{ID: 9100, Path: podPath + "/c0ffee97"}})
	s.cg["app"], s.ids["app"] = 9100, "c0ffee97"
	// runc:[1:CHILD] (its parent, runc:[0:PARENT], is outside the cgroup's
	// scan) and runc:[2:INIT], which will exec the command.
	for _, ps := range []fact.ProcSeen{
		{PID: 5001, PPID: 5000, CgroupID: 9100, Comm: "runc:[1:CHILD]", Args: []string{"/usr/sbin/runc", "init"}, Started: s.now},
		{PID: 5002, PPID: 5001, CgroupID: 9100, Comm: "runc:[2:INIT]", Args: []string{"/usr/sbin/runc", "init"}, Started: s.now},
	} {
		s.in(fact.Input{Proc: &ps})
	}
	s.at(time.Millisecond)
	s.exit("app", 5001, 0, 0)
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: 9100, TGID: 5002, PID: 5002, PPID: 4999, Comm: "app"},
		Filename: "/app", Args: []string{"/app", "--serve"}})
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now, Container: &cri.Container{ID: "c0ffee97",
		SandboxID: "sb1", Name: "app", PodUID: s.uid, CreatedAt: s.now}}})
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerStarted, At: s.now, Container: &cri.Container{ID: "c0ffee97",
		SandboxID: "sb1", Name: "app", PodUID: s.uid, StartedAt: s.now}}})
	s.tick(3 * time.Second)
	if runs := s.find(names.SpanContainerRun); len(runs) != 0 {
		t.Fatalf("the bootstrap's exit ended the run:\n%s", render(runs))
	}
	s.exit("app", 5002, 3, 0)
	s.cri(cri.EventContainerExited, "app", 3, "Error")
	s.tick(3 * time.Second)
	run := s.one(names.SpanContainerRun)
	if run.Attr(names.ProcessPID) != int64(5002) || run.Attr(names.ProcessExitCode) != int64(3) {
		t.Errorf("run: %v", run.Attrs)
	}
}

// Span IDs come from stable facts (the container's ID, which is per
// attempt): a tracer restarted between two attempts does not give the second
// run the first one's span ID, and every span of the trace has its own ID.
func TestSpanIDsStableAcrossTracerRestart(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	s.exit("app", app, 1, 0)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.tick(3 * time.Second)
	first := s.one(names.SpanContainerRun)
	s.c.Shutdown()
	// A new tracer instance: it finds the pod's cgroups and goes on.
	s.c = correlate.New(correlate.Config{NodeName: "node-a", StuckAfter: 10 * time.Second,
		Sink: span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	podPath := "/kubepods/burstable/pod" + s.uid
	s.in(fact.Input{Cgroup: &fact.CgroupSeen{ID: 8000, Path: podPath}})
	s.pod()
	s.at(10 * time.Second)
	app2 := s.container("app", "c0ffee12", 1)
	s.at(time.Second)
	s.exit("app", app2, 1, 0)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.tick(3 * time.Second)
	runs := s.find(names.SpanContainerRun)
	if len(runs) != 2 {
		t.Fatalf("want 2 runs, got %d", len(runs))
	}
	if runs[1].SpanID == first.SpanID {
		t.Errorf("the second attempt's run reuses the first one's span ID %s", first.SpanID)
	}
	seen := map[span.SpanID]string{}
	for _, sp := range s.spans {
		if other, dup := seen[sp.SpanID]; dup {
			t.Errorf("span ID %s of %s already used by %s", sp.SpanID, sp.Name, other)
		}
		seen[sp.SpanID] = sp.Name
	}
}

// does not make the pod's later, clean deletion an overrun.
func TestOverrunBelongsToItsTermination(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	s.event("Killing", "app", "Container app failed liveness probe, will be restarted")
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionIgnored)
	s.at(3 * time.Second)
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.tick(3 * time.Second)
	if stop := s.find(names.SpanContainerStop); len(stop) != 1 || stop[0].Attr(names.GracePeriodOverrun) != true {
		t.Fatalf("the liveness restart's stop: %+v", stop)
	}
	app2 := s.container("app", "c0ffee12", 1)
	s.at(5 * time.Second)
	del := s.now
	grace := int64(3)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.at(10 * time.Millisecond)
	s.signal("app", app2, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.at(20 * time.Millisecond)
	s.exit("app", app2, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.info.Deleted = true
	s.pod()
	s.tick(3 * time.Second)
	term := s.one(names.SpanPodTermination)
	if term.Attr(names.GracePeriodOverrun) != false || term.Status == span.StatusError {
		t.Errorf("a clean deletion after a liveness restart's SIGKILL: %s %v", term.Status, term.Attrs)
	}
}

// The kubelet runs the postStart hook as soon as StartContainer returns,
// and runc returns before the init's own execve is done: on a busy node the
// hook's exec can come first and pass for the init. The runtime's facts
// (the configured command line) correct that, and the hook stays a hook.
func TestPostStartHookBeforeTheInitsExec(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.sandboxUp()
	const id = "c0ffee02"
	s.cg["app"], s.ids["app"] = 9100, id
	s.mkdir(9100, "/kubepods/burstable/pod"+s.uid+"/"+id)
	cmd := []string{"/app", "app"}
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
		Container: &cri.Container{ID: id, SandboxID: "sb1", Name: "app", PodUID: s.uid, CreatedAt: s.now, Args: cmd}}})
	s.at(10 * time.Millisecond)
	hook := s.exec("app", 3001, "sh", "-c", "echo warm")
	s.at(5 * time.Millisecond)
	app := s.exec("app", 3000, cmd...)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerStarted, At: s.now,
		Container: &cri.Container{ID: id, SandboxID: "sb1", Name: "app", PodUID: s.uid, StartedAt: s.now, PID: int(app), Args: cmd}}})
	s.at(30 * time.Millisecond)
	s.exit("app", hook, 0, 0)
	s.cond("Ready")
	s.tick(3 * time.Second)
	s.at(time.Second)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.tick(3 * time.Second)
	if post := s.one(names.SpanContainerPostStart); post.Attr(names.ProcessPID) != int64(hook) {
		t.Errorf("poststart: %v", post.Attrs)
	}
	if run := s.one(names.SpanContainerRun); run.Attr(names.ProcessPID) != int64(app) {
		t.Errorf("run: %v", run.Attrs)
	}
}

// On a node inside a container (kind), a signal from a host's process has
// no pid in the node's pid namespace: the kernel side reports pid 0 and
// SenderOutside. It is an external sender, not the kernel (whose senders
// have pid 0 too).
func TestSenderOutsideTheNodesPIDNamespace(t *testing.T) {
	for _, c := range []struct {
		outside bool
		want    string
	}{{true, "external"}, {false, "kernel"}} {
		t.Run(c.want, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(time.Second)
			s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget,
				TGID: 0, PID: 0, Comm: "bash", CgroupID: 1},
				Signal: syscall.SIGKILL, Code: kernel.SIUser, Result: kernel.SignalDelivered, Disposition: kernel.DispositionDefault,
				TargetTGID: app, TargetPID: app, TargetCgroupID: s.cg["app"], TargetNSInit: true, SenderOutside: c.outside})
			s.exit("app", app, 0, syscall.SIGKILL)
			s.cri(cri.EventContainerExited, "app", 137, "Error")
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			if got := run.Attr(names.SignalSenderKind); got != c.want {
				t.Errorf("SIGKILL from pid 0, outside %v: sender kind %v, want %s (%v)", c.outside, got, c.want, run.Attrs)
			}
		})
	}
}
