package containerd_test

import (
	"context"
	"testing"
	"time"

	"github.com/podchron/podchron/test/harness/containerd"
)

// BenchmarkPodLifecycle measures the CRI calls of one pod with one
// container through the whole lifecycle, as a kubelet issues them. The
// per-call means are reported as custom metrics (ms/op).
func BenchmarkPodLifecycle(b *testing.B) {
	h := containerd.Start(b, containerd.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ResetTimer()
	for b.Loop() {
		pod, err := h.RunPodSandbox(ctx, containerd.PodSpec{})
		if err != nil {
			b.Fatal(err)
		}
		id, err := h.RunContainer(ctx, pod, containerd.ContainerSpec{
			Name: "app", Command: []string{"sh", "-c", `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`},
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.StopContainer(ctx, id, 10*time.Second); err != nil {
			b.Fatal(err)
		}
		if err := h.RemoveContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
		if err := h.StopPodSandbox(ctx, pod.ID); err != nil {
			b.Fatal(err)
		}
		if err := h.RemovePodSandbox(ctx, pod.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tm := h.Timings()
	for _, op := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "StopPodSandbox", "RemovePodSandbox"} {
		b.ReportMetric(float64(tm.Stats(op).Mean)/1e6, op+"-ms")
	}
	b.Logf("timings:\n%s", tm.Summary())
}
