package correlate_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

func (s *sim) rmdir(id uint64, path string) {
	s.kernel(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupRmdir, Origin: kernel.OriginWatched}, ID: id, Path: path})
}

// activeDeadlineSeconds: the kubelet stops the pod, no API deletion; its
// status (Failed, DeadlineExceeded) comes after the stop. The termination
// begins at the runtime's stop signal and says why; the pod ends when its
// cgroup is gone, though the API keeps the object.
func TestTerminationByActiveDeadline(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.info.OwnerKind = "Job"
	s.info.RestartPolicy = "Never"
	app := s.startup()
	s.at(5 * time.Second)
	stopAt := s.now
	s.gracefulStop("app", app, 30*time.Millisecond)
	s.at(500 * time.Millisecond)
	s.info.Phase, s.info.Reason, s.info.Message = "Failed", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	s.pod()
	s.at(time.Second)
	s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.tick(3 * time.Second)
	term := s.one(names.SpanPodTermination)
	if !term.Start.Equal(stopAt) || term.Attr(names.TerminationReason) != "DeadlineExceeded" {
		t.Errorf("termination %s (stop at %s): %v", term.Start, stopAt, term.Attrs)
	}
	s.one("pod")
}

// kubeletEndsPod runs a pod of one container (restartPolicy Never) that
// the kubelet ends with no deletion: 5 s after its start-up (meanwhile,
// after 1 s, whatever mid does) the runtime's graceful stop, and a second
// later the pod's cgroup removed. It returns the stop's and the removal's
// times; no API status says why.
func (s *sim) kubeletEndsPod(mid func()) (stopAt, goneAt time.Time) {
	s.info.InitContainers = nil
	s.info.RestartPolicy = "Never"
	app := s.startup()
	s.at(time.Second)
	if mid != nil {
		mid()
	}
	s.at(4 * time.Second)
	stopAt = s.now
	s.gracefulStop("app", app, 30*time.Millisecond)
	s.at(time.Second)
	goneAt = s.now
	s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
	return stopAt, goneAt
}

// The same end on a node faster than its API server's watch: the kubelet
// stops the container and removes the pod's cgroup before the watch
// delivers its status (Failed, DeadlineExceeded; seen on the 1.37 leg of
// CI on 2026-12-06). The pod's end waits for the status that says why,
// and the termination still begins at the stop.
func TestTerminationByActiveDeadlineStatusAfterCgroup(t *testing.T) {
	s := newSim(t)
	stopAt, goneAt := s.kubeletEndsPod(nil)
	s.tick(2 * time.Second)
	if len(s.find("pod")) != 0 {
		t.Fatal("the pod ended before its status said why")
	}
	s.info.Phase, s.info.Reason, s.info.Message = "Failed", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	s.pod()
	s.tick(time.Second)
	term := s.one(names.SpanPodTermination)
	if !term.Start.Equal(stopAt) || term.Attr(names.TerminationReason) != "DeadlineExceeded" {
		t.Errorf("termination %s (stop at %s): %v", term.Start, stopAt, term.Attrs)
	}
	if root := s.one("pod"); !root.End.Equal(goneAt) {
		t.Errorf("the pod ends %s, its cgroup went %s", root.End, goneAt)
	}
}

// A status that never comes (the watch stuck while the API server still
// answers): the pod ends when its cgroup went, after a bounded wait, and
// the runtime's stop still opens its termination, with no reason to tell.
func TestPodEndWithoutItsStatus(t *testing.T) {
	s := newSim(t)
	stopAt, goneAt := s.kubeletEndsPod(nil)
	s.tick(time.Minute)
	term := s.one(names.SpanPodTermination)
	if !term.Start.Equal(stopAt) || term.Attr(names.TerminationReason) != nil {
		t.Errorf("termination %s (stop at %s): %v", term.Start, stopAt, term.Attrs)
	}
	if root := s.one("pod"); !root.End.Equal(goneAt) {
		t.Errorf("the pod ends %s, its cgroup went %s", root.End, goneAt)
	}
}

// The API server goes away, then the kubelet ends the pod (a deadline, an
// eviction: no status can say which) and removes its cgroup. The pod ends
// with its cgroup, and the runtime's stop still opens its termination,
// with no reason to tell; the trace says the API server was unavailable.
func TestKubeletEndWhileAPIDown(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{API: &fact.APIStatus{Available: true, Since: s.now}})
	stopAt, _ := s.kubeletEndsPod(func() {
		s.in(fact.Input{API: &fact.APIStatus{Available: false, Since: s.now, Err: "connection refused"}})
	})
	s.tick(3 * time.Second)
	term := s.one(names.SpanPodTermination)
	if !term.Start.Equal(stopAt) || term.Attr(names.TerminationReason) != nil {
		t.Errorf("termination %s (stop at %s): %v", term.Start, stopAt, term.Attrs)
	}
	if d, _ := s.one("pod").Attr(names.Degraded).(string); !strings.Contains(d, "apiserver unavailable") {
		t.Errorf("root: degraded %q", d)
	}
}

// A Job's pod with a native sidecar: once the main container is done the
// kubelet stops the sidecar. That is the pod's termination (Completed), and
// the sidecar's SIGTERM death is not an error.
func TestJobWithSidecarCompletes(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = []fact.ContainerSpec{{Name: "proxy", Sidecar: true}}
	s.info.OwnerKind = "Job"
	s.info.RestartPolicy = "Never"
	s.info.Containers[0].Readiness = nil
	s.info.Containers[0].PostStart = nil
	s.sandboxUp()
	proxy := s.container("proxy", "c0ffee01", 0)
	app := s.container("app", "c0ffee02", 0)
	s.cond("Ready")
	s.tick(2 * time.Second)
	s.at(3 * time.Second)
	s.exit("app", app, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.at(100 * time.Millisecond)
	stopAt := s.now
	s.signal("proxy", proxy, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("proxy", proxy, 0, syscall.SIGTERM)
	s.cri(cri.EventContainerExited, "proxy", 143, "Error")
	s.info.Phase = "Succeeded"
	s.pod()
	s.at(time.Second)
	s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.tick(3 * time.Second)
	term := s.one(names.SpanPodTermination)
	if !term.Start.Equal(stopAt) || term.Attr(names.TerminationReason) != "Completed" || term.Status == span.StatusError {
		t.Errorf("termination %s (sidecar stop %s): %s %v", term.Start, stopAt, term.Status, term.Attrs)
	}
	for _, run := range s.find(names.SpanContainerRun) {
		if run.Status == span.StatusError {
			t.Errorf("run of %v is an error: %v", run.Attr(names.K8sContainerName), run.Attrs)
		}
	}
}

// A static pod: the runtime, its cgroups and the kubelet's Events carry the
// static pod's own UID, the API object (the mirror) another. One trace; the
// mirror's deletion and re-creation do not end the pod; its cgroups do.
func TestStaticPodOneTrace(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.info.UID, s.info.ConfigUID, s.info.Static = "mirror-uid-1", s.uid, true
	s.info.OwnerKind, s.info.Namespace, s.info.Name = "Node", "kube-system", "etcd-node-a"
	app := s.startup()
	// The mirror is deleted (kubectl delete) and the kubelet recreates it.
	s.at(time.Second)
	gone := s.info
	gone.Deleted = true
	s.in(fact.Input{Pod: &gone})
	s.at(time.Second)
	s.info.UID = "mirror-uid-2"
	s.pod()
	s.in(fact.Input{Event: &fact.K8sEvent{UID: "ev-mirror", PodUID: "mirror-uid-2", Namespace: "kube-system", Reason: "Unhealthy",
		Container: "app", Message: "Liveness probe failed", FirstTime: s.now, LastTime: s.now, Count: 1}})
	s.event("Killing", "app", "Stopping container app")
	s.tick(time.Minute)
	if len(s.find("pod")) != 0 {
		t.Fatal("the mirror's deletion ended the static pod")
	}
	// The manifest is removed: the kubelet stops it and removes its cgroups.
	s.gracefulStop("app", app, 20*time.Millisecond)
	s.at(time.Second)
	s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.tick(3 * time.Second)
	root := s.one("pod")
	for _, sp := range s.spans {
		if sp.TraceID != span.TraceIDForPod(s.uid) {
			t.Errorf("%s in another trace", sp.Name)
		}
	}
	var uid, mirror string
	for _, a := range root.Resource {
		switch a.Key {
		case names.K8sPodUID:
			uid, _ = a.Value.(string)
		case names.PodMirrorUID:
			mirror, _ = a.Value.(string)
		}
	}
	if uid != s.uid || mirror != "mirror-uid-2" {
		t.Errorf("resource uid %q mirror %q", uid, mirror)
	}
	if term := s.one(names.SpanPodTermination); term.Attr(names.TerminationReason) != "StaticPodRemoved" {
		t.Errorf("termination: %v", term.Attrs)
	}
	var killing, unhealthy bool
	for _, e := range root.Events {
		killing = killing || e.Name == "k8s.Killing"
		unhealthy = unhealthy || e.Name == "k8s.Unhealthy"
	}
	if !killing || !unhealthy {
		t.Errorf("Events addressed to the static pod's UID (%v) and to the mirror's (%v) belong in the trace", killing, unhealthy)
	}
}

// Node-pressure eviction and graceful node shutdown: the kubelet stops the
// pod itself (no API deletion) and then writes its status: phase Failed,
// its reason, and DisruptionTarget=TerminationByKubelet. These are synthetic
// streams of the facts the kubelet's eviction and shutdown managers write:
// the e2e's single node cannot be put under memory pressure without evicting
// every other scenario's pods, and graceful node shutdown needs systemd's
// inhibitor locks, which this machine (no systemd as PID 1) cannot give.
func TestKubeletEvictionAndNodeShutdown(t *testing.T) {
	for _, tc := range []struct{ reason, message string }{
		{"Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi."},
		{"Terminated", "Pod was terminated in response to imminent node shutdown."},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(5 * time.Second)
			stopAt := s.now
			s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
			s.at(20 * time.Millisecond)
			s.exit("app", app, 0, 0)
			s.at(100 * time.Millisecond)
			s.info.Phase, s.info.Reason, s.info.Message = "Failed", tc.reason, tc.message
			s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: "DisruptionTarget", Status: "True",
				Reason: "TerminationByKubelet", Message: tc.message, LastTransitionTime: s.now})
			s.pod()
			s.cri(cri.EventContainerExited, "app", 0, "Completed")
			s.at(time.Second)
			s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
			s.tick(3 * time.Second)
			term := s.one(names.SpanPodTermination)
			if !term.Start.Equal(stopAt) || term.Attr(names.TerminationReason) != "TerminationByKubelet" {
				t.Errorf("termination %s (stop %s): %v", term.Start, stopAt, term.Attrs)
			}
			run := s.one(names.SpanContainerRun)
			if run.Attr(names.ExitCause) != "evicted" || run.Status == span.StatusError {
				t.Errorf("run: %s %v", run.Status, run.Attrs)
			}
			s.one("pod")
		})
	}
}
