package cri

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	crifact "github.com/podchron/podchron/internal/fact/cri"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func snap(sec float64, sbs []crifact.Sandbox, cts []crifact.Container) *Snapshot {
	s := &Snapshot{Time: at(sec), Sandboxes: map[string]crifact.Sandbox{}, Containers: map[string]crifact.Container{}}
	for _, sb := range sbs {
		sb.Detailed = true
		s.Sandboxes[sb.ID] = sb
	}
	for _, c := range cts {
		c.Detailed = true
		s.Containers[c.ID] = c
	}
	return s
}

// render makes events comparable: "Type id[phase]".
func render(evs []crifact.Event) []string {
	var out []string
	for _, e := range evs {
		id := ""
		switch {
		case e.Container != nil:
			id = e.Container.ID
		case e.Sandbox != nil:
			id = e.Sandbox.ID
		}
		out = append(out, fmt.Sprintf("%s %s", e.Type, id))
	}
	return out
}

func TestDiff(t *testing.T) {
	sb := crifact.Sandbox{ID: "sb1", PodName: "p", PodNamespace: "ns", PodUID: "u", State: crifact.SandboxReady, CreatedAt: at(0)}
	sbStopped := sb
	sbStopped.State = crifact.SandboxNotReady
	created := crifact.Container{ID: "c1", SandboxID: "sb1", Name: "app", State: crifact.StateCreated, CreatedAt: at(1)}
	running := created
	running.State, running.StartedAt, running.PID = crifact.StateRunning, at(2), 42
	exited := running
	exited.State, exited.FinishedAt, exited.ExitCode, exited.Reason, exited.PID = crifact.StateExited, at(3), 137, crifact.ReasonOOMKilled, 0
	exitedEarly := exited // the runtime stamped the exit before the start
	exitedEarly.FinishedAt = at(1.5)
	failedStart := created
	failedStart.State, failedStart.FinishedAt, failedStart.ExitCode, failedStart.Reason = crifact.StateExited, at(2), 128, "StartError"

	tests := []struct {
		name       string
		prev, next *Snapshot
		want       []string
	}{
		{"nothing", snap(10, nil, nil), snap(11, nil, nil), nil},
		{"from nil", nil, snap(10, []crifact.Sandbox{sb}, []crifact.Container{running}),
			[]string{"SandboxCreated sb1", "ContainerCreated c1", "ContainerStarted c1"}},
		{"sandbox and container appear", snap(9, nil, nil), snap(10, []crifact.Sandbox{sb}, []crifact.Container{created}),
			[]string{"SandboxCreated sb1", "ContainerCreated c1"}},
		{"start", snap(9, []crifact.Sandbox{sb}, []crifact.Container{created}), snap(10, []crifact.Sandbox{sb}, []crifact.Container{running}),
			[]string{"ContainerStarted c1"}},
		{"exit", snap(9, []crifact.Sandbox{sb}, []crifact.Container{running}), snap(10, []crifact.Sandbox{sb}, []crifact.Container{exited}),
			[]string{"ContainerExited c1"}},
		{"created to exited synthesizes start", snap(9, []crifact.Sandbox{sb}, []crifact.Container{created}), snap(10, []crifact.Sandbox{sb}, []crifact.Container{exited}),
			[]string{"ContainerStarted c1", "ContainerExited c1"}},
		{"whole life between polls", snap(0.5, []crifact.Sandbox{sb}, nil), snap(10, []crifact.Sandbox{sb}, []crifact.Container{exited}),
			[]string{"ContainerCreated c1", "ContainerStarted c1", "ContainerExited c1"}},
		{"an exit stamped before its start comes after it", snap(9, []crifact.Sandbox{sb}, []crifact.Container{created}), snap(10, []crifact.Sandbox{sb}, []crifact.Container{exitedEarly}),
			[]string{"ContainerStarted c1", "ContainerExited c1"}},
		{"failed start has no Started", snap(0.5, []crifact.Sandbox{sb}, nil), snap(10, []crifact.Sandbox{sb}, []crifact.Container{failedStart}),
			[]string{"ContainerCreated c1", "ContainerExited c1"}},
		{"unchanged", snap(9, []crifact.Sandbox{sb}, []crifact.Container{exited}), snap(10, []crifact.Sandbox{sb}, []crifact.Container{exited}), nil},
		{"teardown", snap(9, []crifact.Sandbox{sb}, []crifact.Container{exited}), snap(10, []crifact.Sandbox{sbStopped}, []crifact.Container{exited}),
			[]string{"SandboxStopped sb1"}},
		{"removal order", snap(9, []crifact.Sandbox{sb}, []crifact.Container{running}), snap(10, nil, nil),
			[]string{"ContainerRemoved c1", "SandboxStopped sb1", "SandboxRemoved sb1"}},
		{"stopped sandbox removed", snap(9, []crifact.Sandbox{sbStopped}, nil), snap(10, nil, nil),
			[]string{"SandboxRemoved sb1"}},
		{"stopped sandbox first seen", nil, snap(10, []crifact.Sandbox{sbStopped}, nil),
			[]string{"SandboxCreated sb1", "SandboxStopped sb1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(Diff(tc.prev, tc.next, crifact.PhaseLive))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Diff:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestDiffEventFields(t *testing.T) {
	sb := crifact.Sandbox{ID: "sb1", PodName: "p", PodNamespace: "ns", State: crifact.SandboxReady, CreatedAt: at(0)}
	c := crifact.Container{ID: "c1", SandboxID: "sb1", Name: "app", State: crifact.StateExited, CreatedAt: at(1), StartedAt: at(2),
		FinishedAt: at(3), ExitCode: 137, Reason: crifact.ReasonOOMKilled}
	evs := Diff(nil, snap(10, []crifact.Sandbox{sb}, []crifact.Container{c}), crifact.PhaseResync)
	if len(evs) != 4 {
		t.Fatalf("got %d events: %q", len(evs), render(evs))
	}
	wantAt := []time.Time{at(0), at(1), at(2), at(3)}
	for i, e := range evs {
		if !e.At.Equal(wantAt[i]) {
			t.Errorf("%s At=%v want %v", e.Type, e.At, wantAt[i])
		}
		if !e.Observed.Equal(at(10)) || e.Phase != crifact.PhaseResync {
			t.Errorf("%s Observed=%v Phase=%s", e.Type, e.Observed, e.Phase)
		}
		if e.Sandbox == nil || e.Sandbox.PodName != "p" {
			t.Errorf("%s: sandbox not attached", e.Type)
		}
	}
	ex := evs[3]
	if ex.Type != crifact.EventContainerExited || ex.Container.ExitCode != 137 || ex.Container.Reason != crifact.ReasonOOMKilled {
		t.Errorf("exit event: %+v", ex.Container)
	}
	if s := ex.String(); !strings.Contains(s, "exit=137 reason=OOMKilled") {
		t.Errorf("String() = %q", s)
	}
	// Removed events carry the last known sandbox even after it is gone.
	evs = Diff(snap(10, []crifact.Sandbox{sb}, []crifact.Container{c}), snap(11, nil, nil), crifact.PhaseLive)
	if len(evs) != 3 || evs[0].Sandbox == nil || !evs[0].At.Equal(at(11)) || evs[1].Sandbox.State != crifact.SandboxNotReady {
		t.Errorf("removal: %q", render(evs))
	}
}

func TestGapString(t *testing.T) {
	g := crifact.Gap{LastSeen: at(0), Since: at(1), Until: at(4), Err: fmt.Errorf("boom")}
	if g.Duration() != 3*time.Second {
		t.Errorf("Duration = %v", g.Duration())
	}
	if s := g.String(); !strings.Contains(s, "from 2025-01-01T12:00:01Z to 2025-01-01T12:00:04Z (3s") {
		t.Errorf("String() = %q", s)
	}
}

func TestVerboseInfo(t *testing.T) {
	// Shapes as returned by containerd 1.6 (trimmed).
	sbInfo := map[string]string{"info": `{"pid":1234,"processStatus":"running","netNamespaceClosed":false,
		"runtimeSpec":{"linux":{"cgroupsPath":"/kubepods/burstable/podu/sb1",
		"namespaces":[{"type":"pid"},{"type":"network","path":"/run/netns/cni-1"}]}}}`}
	resp := &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{
			Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: at(0).UnixNano(),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u", Attempt: 2},
			Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.2", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::2"}}},
		},
		Info: sbInfo,
	}
	sb := sandboxFromStatus(resp)
	if sb.PID != 1234 || sb.NetNSPath != "/run/netns/cni-1" || sb.CgroupsPath != "/kubepods/burstable/podu/sb1" ||
		sb.IP != "10.0.0.2" || len(sb.AdditionalIPs) != 1 || sb.Attempt != 2 || !sb.CreatedAt.Equal(at(0)) || !sb.Detailed {
		t.Errorf("sandbox: %+v", sb)
	}
	resp.Info = map[string]string{"info": `{"pid":1234,"netNamespaceClosed":true,"runtimeSpec":{"linux":{"namespaces":[{"type":"network","path":"/run/netns/cni-1"}]}}}`}
	if sb := sandboxFromStatus(resp); sb.NetNSPath != "" {
		t.Errorf("closed netns reported: %q", sb.NetNSPath)
	}

	cresp := &runtimeapi.ContainerStatusResponse{
		Status: &runtimeapi.ContainerStatus{
			Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING,
			Metadata:  &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1},
			CreatedAt: at(1).UnixNano(), StartedAt: at(2).UnixNano(),
			Image:  &runtimeapi.ImageSpec{Image: "busybox"},
			Labels: map[string]string{crifact.LabelPodName: "p", crifact.LabelPodNamespace: "ns", crifact.LabelPodUID: "u"},
			Resources: &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{
				MemoryLimitInBytes: 32 << 20,
			}},
		},
		Info: map[string]string{"info": `{"sandboxID":"sb1","pid":99,"runtimeSpec":{"process":{"args":["sh","-c","exec app"]},"linux":{"cgroupsPath":"/kubepods/burstable/podu/c1"}}}`},
	}
	c := containerFromStatus(cresp, "")
	if !slices.Equal(c.Args, []string{"sh", "-c", "exec app"}) {
		t.Errorf("configured args: %q", c.Args)
	}
	if c.SandboxID != "sb1" || c.PID != 99 || c.CgroupsPath != "/kubepods/burstable/podu/c1" || c.PodName != "p" ||
		c.PodUID != "u" || c.MemoryLimitBytes != 32<<20 || c.FinishedAt != (time.Time{}) || c.Attempt != 1 {
		t.Errorf("container: %+v", c)
	}
	cresp.Status.State = runtimeapi.ContainerState_CONTAINER_EXITED
	if c := containerFromStatus(cresp, "sbX"); c.PID != 0 || c.SandboxID != "sbX" {
		t.Errorf("exited container: pid %d sandbox %s", c.PID, c.SandboxID)
	}
	// garbage or missing info is tolerated
	cresp.Info = map[string]string{"info": "not json"}
	if c := containerFromStatus(cresp, "sb1"); c.PID != 0 || c.CgroupsPath != "" {
		t.Errorf("garbage info: %+v", c)
	}
}

func TestSocketPath(t *testing.T) {
	for in, want := range map[string]string{
		"unix:///run/containerd/containerd.sock": "/run/containerd/containerd.sock",
		"unix:/run/crio/crio.sock":               "/run/crio/crio.sock",
		"/run/k3s/containerd/containerd.sock":    "/run/k3s/containerd/containerd.sock",
	} {
		if got := socketPath(in); got != want {
			t.Errorf("socketPath(%q) = %q, want %q", in, got, want)
		}
	}
}
