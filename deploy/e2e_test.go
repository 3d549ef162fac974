package deploy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/test/harness/containerd"
)

// Paths a kubelet masks or makes read-only in every non-privileged
// container (k8s.io/kubernetes/pkg/securitycontext, DefaultProcMount).
var (
	kubeletMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	kubeletReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// TestDaemonSetOnContainerd runs the real image, built by build-image.sh
// and imported with ctr, on a real containerd (the test harness's private
// one) with the DaemonSet's pod spec translated to CRI the way a kubelet
// does: hostPID, the same capabilities, seccomp RuntimeDefault, no privilege
// escalation, a read-only root filesystem, uid 0, the same read-only host
// mounts, resources, arguments and environment. It checks that the tracer
// becomes ready (probes loaded, runtime reached through the read-only
// socket directory), sees a workload's execs and its OOM kill, runs with
// exactly CAP_BPF and CAP_PERFMON, and stops cleanly on SIGTERM.
//
// The only departures from a kubelet: the API server is absent (the tracer
// runs degraded), the runtime directory holds only a hard link to the
// harness's socket, and --cgroup-root points at the harness's pod cgroups.
func TestDaemonSetOnContainerd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the containerd end-to-end test")
	}
	ds := loadDaemonSet(t)
	spec := ds.Spec.Template.Spec
	c := tracer(t, ds)

	h := containerd.Start(t, containerd.Config{}) // skips when containerd, runc, CNI... are missing
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// The image, built without Docker and imported with ctr, by the script.
	work := t.TempDir()
	archive := filepath.Join(work, "podchron.tar")
	build := exec.CommandContext(ctx, "bash", "build-image.sh", "--import")
	build.Env = append(os.Environ(), "IMAGE="+c.Image, "OUT="+archive, "VERSION=e2e", "CONTAINERD_ADDRESS="+h.Socket)
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("build-image.sh --import: %v\n%s", err, out)
	}
	t.Logf("build-image.sh --import:\n%s", out)
	img, err := imageStatus(ctx, h.Endpoint, c.Image)
	if err != nil || img.GetImage() == nil {
		t.Fatalf("CRI does not see %s after the import: %v", c.Image, err)
	}
	t.Logf("CRI image %s: id %s, %d bytes", c.Image, img.GetImage().GetId(), img.GetImage().GetSize())

	// The runtime directory: like /run/containerd, it holds the socket.
	runDir := filepath.Join(work, "run-containerd")
	if err := os.Mkdir(runDir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(h.Socket, filepath.Join(runDir, "containerd.sock")); err != nil {
		runDir = filepath.Dir(h.Socket) // another file system: mount the harness's directory
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		p := v.HostPath.Path
		if v.Name == "runtime" {
			p = runDir
		}
		if _, err := os.Stat(p); err != nil {
			t.Skipf("host path %s of volume %s: %v", p, v.Name, err)
		}
		hostPaths[v.Name] = p
	}
	var mounts []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, &runtimeapi.Mount{HostPath: hostPaths[m.Name], ContainerPath: m.MountPath, Readonly: m.ReadOnly})
	}

	memLimit := c.Resources.Limits.Memory().Value()
	var envs []*runtimeapi.KeyValue
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			v = "e2e-node"
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			v = strconv.FormatInt(memLimit, 10)
		case e.ValueFrom != nil:
			t.Fatalf("env %s: unsupported valueFrom", e.Name)
		}
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(v)})
	}

	pod, err := h.RunPodSandbox(ctx, containerd.PodSpec{Name: "podchron-e2e", Namespace: ds.Namespace, HostPID: spec.HostPID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = h.TeardownPod(ctx, pod.ID, 0)
	})
	sb, err := h.CRI().SandboxStatus(ctx, pod.ID)
	if err != nil {
		t.Fatal(err)
	}

	sc := c.SecurityContext
	var add, drop []string
	for _, c := range sc.Capabilities.Add {
		add = append(add, string(c))
	}
	for _, c := range sc.Capabilities.Drop {
		drop = append(drop, string(c))
	}
	seccomp := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	if spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("unexpected seccomp profile %s", spec.SecurityContext.SeccompProfile.Type)
	}
	cpuLimit := c.Resources.Limits.Cpu().MilliValue()
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name},
		Image:    &runtimeapi.ImageSpec{Image: c.Image},
		Args:     append(append([]string(nil), c.Args...), "--cgroup-root="+h.CgroupRoot),
		Envs:     envs,
		Mounts:   mounts,
		Labels: map[string]string{
			cri.LabelContainerName: c.Name, cri.LabelPodName: pod.Name, cri.LabelPodNamespace: pod.Namespace, cri.LabelPodUID: pod.UID,
		},
		LogPath: "tracer/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{
				MemoryLimitInBytes: memLimit,
				CpuPeriod:          100000,
				CpuQuota:           cpuLimit * 100,
				CpuShares:          c.Resources.Requests.Cpu().MilliValue() * 1024 / 1000,
			},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Capabilities:     &runtimeapi.Capability{AddCapabilities: add, DropCapabilities: drop},
				Privileged:       sc.Privileged != nil && *sc.Privileged,
				NamespaceOptions: pod.Config.GetLinux().GetSecurityContext().GetNamespaceOptions(),
				RunAsUser:        &runtimeapi.Int64Value{Value: *sc.RunAsUser},
				RunAsGroup:       &runtimeapi.Int64Value{Value: *sc.RunAsGroup},
				ReadonlyRootfs:   *sc.ReadOnlyRootFilesystem,
				NoNewPrivs:       !*sc.AllowPrivilegeEscalation,
				Seccomp:          seccomp,
				MaskedPaths:      kubeletMaskedPaths,
				ReadonlyPaths:    kubeletReadonlyPaths,
			},
		},
	}
	rt := h.CRI().RuntimeService()
	created, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod.ID, Config: cfg, SandboxConfig: pod.Config})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetContainerId()
	logPath := filepath.Join(pod.Config.GetLogDirectory(), cfg.LogPath)
	tracerLog := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("tracer log:\n%s", tracerLog())
		}
	}()
	started := time.Now()
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}

	// Reach :9464 inside the pod's network namespace, as the kubelet's
	// probes and Prometheus do through the pod IP.
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialInNetns(sb.NetNSPath, "127.0.0.1:9464")
		},
	}}
	get := func(path string) (int, string, error) {
		resp, err := client.Get("http://pod" + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}

	// Ready: kernel probes loaded; the runtime reached through the socket.
	var body string
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, b, err := get("/readyz")
		body = b
		if err == nil && code == http.StatusOK && strings.Contains(b, "kernel: ok") && strings.Contains(b, "runtime: ok") {
			break
		}
		if ct, _ := h.CRI().ContainerStatus(ctx, id, pod.ID); ct.State == cri.StateExited {
			t.Fatalf("tracer exited (code %d, %s)", ct.ExitCode, ct.Reason)
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracer not ready with its runtime after 90s: %d %q %v", code, b, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("ready %s after start:\n%s", time.Since(started).Round(time.Millisecond), body)
	if code, b, err := get("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz: %d %q %v", code, b, err)
	}
	if !strings.Contains(body, "apiserver: down") {
		t.Errorf("without an API server the tracer should be degraded, /readyz:\n%s", body)
	}

	// The process: uid 0, exactly CAP_BPF and CAP_PERFMON, no_new_privs,
	// a seccomp filter.
	ct, err := h.CRI().ContainerStatus(ctx, id, pod.ID)
	if err != nil || ct.PID == 0 {
		t.Fatalf("tracer status: %+v %v", ct, err)
	}
	status := procStatus(t, ct.PID)
	const bpfPerfmon = "000000c000000000" // bits 38 (CAP_PERFMON) and 39 (CAP_BPF)
	for k, want := range map[string]string{
		"CapEff": bpfPerfmon, "CapPrm": bpfPerfmon, "CapBnd": bpfPerfmon, "CapInh": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "Seccomp": "2", "Uid": "0\t0\t0\t0",
	} {
		if got := status[k]; got != want {
			t.Errorf("tracer /proc/%d/status %s = %q, want %q", ct.PID, k, got, want)
		}
	}

	// A workload: a command that fails, and one that is OOM-killed.
	wl, err := h.RunPodSandbox(ctx, containerd.PodSpec{Name: "workload", Namespace: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = h.TeardownPod(ctx, wl.ID, 0)
	})
	failing, err := h.RunContainer(ctx, wl, containerd.ContainerSpec{Name: "fails", Command: []string{"sh", "-c", "sleep 0.5; true; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	eater, err := h.RunContainer(ctx, wl, containerd.ContainerSpec{Name: "eater", MemoryLimitBytes: 32 << 20,
		Command: []string{"sh", "-c", "sleep 1; dd if=/dev/zero of=/dev/null bs=256M count=1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{failing, eater} {
		if _, err := h.WaitExited(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var metrics string
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, m, err := get("/metrics")
		metrics = m
		if err == nil && metricSum(m, "podchron_oom_kills_total", `namespace="e2e",scope="container"`) >= 1 && metricSum(m, "podchron_probe_events_total", `type="exec"`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tracer did not see the workload's execs and OOM kill within 30s:\n%s", grepMetrics(m, "podchron_"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("tracer metrics after the workload:\n%s", grepMetrics(metrics, "podchron_oom_kills_total", "podchron_probe_events_total", "podchron_probe_up", "podchron_source_up", "podchron_container_exits_total", "process_resident_memory_bytes"))
	if v := metricSum(metrics, "podchron_probe_up", ""); v != 1 {
		t.Errorf("podchron_probe_up = %v", v)
	}

	// Memory: the tracer process and its memory cgroup (which is also
	// charged the BPF maps and the ring buffer).
	status = procStatus(t, ct.PID)
	t.Logf("tracer VmRSS %s (anon %s, file %s), VmHWM %s; memory cgroup: %s (limit %d MiB)",
		status["VmRSS"], status["RssAnon"], status["RssFile"], status["VmHWM"], cgroupMemory(ct.PID), memLimit>>20)

	// SIGTERM: the tracer stops well within the grace period.
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	stopStart := time.Now()
	if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: int64(grace / time.Second)}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(stopStart)
	final, err := h.CRI().ContainerStatus(ctx, id, pod.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tracer stopped in %s: exit code %d (%s)", took.Round(time.Millisecond), final.ExitCode, final.Reason)
	if final.ExitCode == 137 || took >= grace {
		t.Errorf("the tracer did not stop on SIGTERM within the grace period (%s, exit %d)", took, final.ExitCode)
	}
}

// dialInNetns connects to addr from inside the network namespace at nsPath.
// The socket is created on a locked OS thread switched into that namespace;
// it stays there once the thread switches back.
func dialInNetns(nsPath, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer orig.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("setns %s: %w", nsPath, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// Leave the thread locked: it dies with this goroutine.
			ch <- result{c, err}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// cgroupMemory describes the memory use of pid's memory cgroup (v2 or v1).
func cgroupMemory(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			for _, dir := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				for _, file := range []string{"memory.current", "memory.peak"} {
					if v, err := os.ReadFile(filepath.Join(dir, f[2], file)); err == nil {
						out = append(out, fmt.Sprintf("v2 %s=%s MiB", file, mib(v)))
					}
				}
			}
		case strings.Contains(","+f[1]+",", ",memory,"):
			for _, file := range []string{"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.kmem.usage_in_bytes"} {
				if v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", f[2], file)); err == nil {
					out = append(out, fmt.Sprintf("v1 %s=%s MiB", file, mib(v)))
				}
			}
		}
	}
	return strings.Join(out, ", ")
}

func mib(b []byte) string {
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return strings.TrimSpace(string(b))
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64)
}

var reSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)

// metricSum adds the samples of metric whose labels contain match.
func metricSum(text, metric, match string) float64 {
	var sum float64
	for _, l := range strings.Split(text, "\n") {
		m := reSample.FindStringSubmatch(l)
		if m == nil || m[1] != metric || !strings.Contains(m[2], match) {
			continue
		}
		if v, err := strconv.ParseFloat(m[3], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func grepMetrics(text string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// imageStatus asks the CRI image service at endpoint for image.
func imageStatus(ctx context.Context, endpoint, image string) (*runtimeapi.ImageStatusResponse, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	}
	defer conn.Close()
	return runtimeapi.NewImageServiceClient(conn).ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
}
