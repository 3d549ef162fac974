package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// withImageVolumes gives the sim's pod two image volumes of one image and a
// third of another (spec.volumes[].image).
func withImageVolumes(s *sim) {
	s.info.ImageVolumes = []fact.ImageVolume{
		{Name: "tools", Reference: "registry.example/tools:2", PullPolicy: "IfNotPresent"},
		{Name: "tools-again", Reference: "registry.example/tools:2", PullPolicy: "IfNotPresent"},
		{Name: "models", Reference: "registry.example/models@sha256:0123", PullPolicy: "Always"},
	}
}

// An image volume's pull is the pod's, not a container's: the kubelet's
// Events about it name no container. Each becomes a pod.image_volume_pull
// under the start-up, named by its volume, beside the container's own
// pull; a second volume of the same image gets the "already present" one;
// the long pole counts them as image pulls.
func TestImageVolumePullsInStartup(t *testing.T) {
	s := newSim(t)
	withImageVolumes(s)
	s.info.InitContainers = nil
	s.info.Containers[0].PostStart, s.info.Containers[0].Readiness = nil, nil
	s.sandboxUp()
	s.at(time.Second)
	volStart := s.now
	s.event("Pulling", "", `Pulling image "registry.example/tools:2"`)
	s.at(4 * time.Second)
	volEnd := s.now
	s.event("Pulled", "", `Successfully pulled image "registry.example/tools:2" in 4s (4s including waiting). Image size: 1234 bytes.`)
	s.at(time.Millisecond) // the sim's Events take their UID from the time
	s.event("Pulled", "", `Container image "registry.example/tools:2" already present on machine and can be accessed by the pod`)
	s.at(time.Millisecond)
	s.event("Pulling", "", `Pulling image "registry.example/models@sha256:0123"`)
	s.at(20 * time.Second)
	s.event("Pulled", "", `Successfully pulled image "registry.example/models@sha256:0123" in 20s`)
	s.at(time.Millisecond)
	s.event("Pulled", "app", `Container image "registry.example/app:1" already present on machine`)
	s.container("app", "c0ffee02", 0)
	s.at(100 * time.Millisecond)
	s.cond("ContainersReady")
	s.cond("Ready")
	s.tick(2 * time.Second)

	st := s.one(names.SpanPodStartup)
	vols := map[string]span.Span{}
	for _, sp := range s.find(names.SpanPodImageVolumePull) {
		vols[sp.Attr(names.K8sVolumeName).(string)] = sp
		if sp.Parent != st.SpanID || sp.Status != span.StatusOK || sp.Attr(names.K8sContainerName) != nil {
			t.Errorf("%s: parent %s (start-up %s) %s %v", sp.Name, sp.Parent, st.SpanID, sp.Status, sp.Attrs)
		}
	}
	if len(vols) != 3 {
		t.Fatalf("image volume pulls %v, want tools, tools-again, models", vols)
	}
	if tl := vols["tools"]; !tl.Start.Equal(volStart) || !tl.End.Equal(volEnd) || tl.Attr(names.ContainerImageName) != "registry.example/tools" {
		t.Errorf("tools: %s–%s %v", tl.Start, tl.End, tl.Attrs)
	}
	if again := vols["tools-again"]; !strings.Contains(again.Attr(names.Message).(string), "already present") {
		t.Errorf("tools-again: %v", again.Attrs)
	}
	if m := vols["models"]; m.End.Sub(m.Start) != 20*time.Second || m.Attr(names.ContainerImageName) != "registry.example/models" {
		t.Errorf("models: %s %v", m.End.Sub(m.Start), m.Attrs)
	}
	if pl := s.one(names.SpanContainerImagePull); pl.Attr(names.K8sContainerName) != "app" {
		t.Errorf("the container's pull: %v", pl.Attrs)
	}
	if st.Attr(names.StartupLongPole) != names.PhaseImagePull || st.Attr(names.StartupLongPoleSeconds) != 20.0 {
		t.Errorf("long pole %v %v, want image_pull 20", st.Attr(names.StartupLongPole), st.Attr(names.StartupLongPoleSeconds))
	}
}

// An image volume whose image cannot be pulled holds every container: the
// start-up, ended at the deletion, names the volume, not a container.
func TestImageVolumePullFailure(t *testing.T) {
	s := newSim(t)
	withImageVolumes(s)
	s.info.ImageVolumes = s.info.ImageVolumes[:1]
	s.info.InitContainers = nil
	s.sandboxUp()
	s.event("Pulling", "", `Pulling image "registry.example/tools:2"`)
	s.at(300 * time.Millisecond)
	s.event("Failed", "", `Failed to pull image "registry.example/tools:2": failed to resolve reference: no such host`)
	s.waiting(false, "app", "ContainerCreating", "")
	s.at(5 * time.Second)
	s.deleteNow()
	s.tick(time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Status != span.StatusError || !strings.Contains(st.StatusMessage, "image volume tools") ||
		strings.Contains(st.StatusMessage, "container volume/") || st.Attr(names.K8sContainerName) != nil {
		t.Errorf("start-up: %s %q %v", st.Status, st.StatusMessage, st.Attrs)
	}
	pl := s.one(names.SpanPodImageVolumePull)
	if pl.Status != span.StatusError || pl.Attr(names.K8sVolumeName) != "tools" || !strings.Contains(pl.StatusMessage, "no such host") {
		t.Errorf("pull: %s %q %v", pl.Status, pl.StatusMessage, pl.Attrs)
	}
}
