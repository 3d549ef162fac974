// Package kubelet runs a real kubelet on a pure cgroup v2 node, a qemu
// guest, and the tracer beside it: with the systemd cgroup driver in a
// guest whose PID 1 is systemd (the node kubeadm makes today), or with the
// cgroupfs driver (PODCHRON_VM_CGROUP_DRIVER=cgroupfs, busybox init);
// nodes the host (hybrid cgroups, no systemd) cannot be. The cluster is
// the e2e's (test/e2e/cluster: etcd, the API server, the
// controller-manager, the scheduler, the kubelet; the 1.37 leg's
// binaries) on the 1.37 leg's containerd 2.
// `make test-vm-kubelet` (and test-vm-kubelet-cgroupfs) builds the tracer
// and boots the guest (see test/vm/README.md).
//
// It lives under testdata/ so `go test ./...` on the host never runs it.
package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/export/console"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
	"github.com/podchron/podchron/test/e2e/cluster"
	"github.com/podchron/podchron/test/harness/containerd"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// The guest paths make test-vm-kubelet puts the binaries at.
var (
	tracerBin = envOr("PODCHRON_VM_TRACER", "/podchron/bin/tracer")
	k8sBin    = envOr("PODCHRON_VM_K8S_BIN", "/podchron/k8s")
	// driver is the kubelet's cgroupDriver.
	driver = envOr("PODCHRON_VM_CGROUP_DRIVER", containerd.CgroupDriverSystemd)
)

// podCgroup is the cgroup the kubelet gives a Burstable pod, relative to
// the hierarchy's root; containerCgroup its container's, as containerd's
// CRI names it.
func podCgroup(uid string) string {
	if driver == containerd.CgroupDriverSystemd {
		return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	}
	return "/kubepods/burstable/pod" + uid
}

func containerCgroup(uid, id string) string {
	if driver == containerd.CgroupDriverSystemd {
		return podCgroup(uid) + "/cri-containerd-" + id + ".scope"
	}
	return podCgroup(uid) + "/" + id
}

const metricsAddr = "127.0.0.1:19464"

// spans collects the tracer's JSON lines.
type spans struct {
	mu  sync.Mutex
	all []span.Span
	bad []string
}

func (s *spans) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		sp, err := console.ParseJSON(line)
		s.mu.Lock()
		if err != nil {
			s.bad = append(s.bad, string(line))
		} else {
			s.all = append(s.all, sp)
		}
		s.mu.Unlock()
	}
}

// of returns the spans of the pod with UID uid.
func (s *spans) of(uid string) []span.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []span.Span
	for _, sp := range s.all {
		if span.Lookup(sp.Resource, names.K8sPodUID) == uid {
			out = append(out, sp)
		}
	}
	return out
}

func str(sp span.Span, k string) string {
	v, _ := sp.Attr(k).(string)
	return v
}

func named(all []span.Span, name string) []span.Span {
	var out []span.Span
	for _, sp := range all {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

// checkNode fails the test unless the guest is the node it must prove:
// cgroup2 alone at /sys/fs/cgroup, and systemd as PID 1 for its driver.
func checkNode(t *testing.T) {
	t.Helper()
	comm, err := os.ReadFile("/proc/1/comm")
	if isSystemd := err == nil && strings.TrimSpace(string(comm)) == "systemd"; isSystemd != (driver == containerd.CgroupDriverSystemd) {
		t.Fatalf("PID 1 is %q (%v) and the cgroup driver %s: boot the guest with -systemd for the systemd driver, without for cgroupfs", bytes.TrimSpace(comm), err, driver)
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Fatalf("/sys/fs/cgroup has filesystem magic %#x, want cgroup2 (%#x)", st.Type, unix.CGROUP2_SUPER_MAGIC)
	}
}

// TestKubelet runs a pod through the kubelet (cgroupDriver: systemd, or
// cgroupfs) and checks the tracer's trace of it against what the kubelet,
// CRI and the kernel say: the pod's and its container's cgroups (a slice
// and a scope with systemd) where the kubelet and runc put them, the exec
// readiness probes and a kubectl exec seen by the kernel in the
// container's cgroup, the SIGTERM at deletion sent by the runtime, and the
// trace finished; and a second pod's OOM kill, a group kill by the
// kubelet's own memory.oom.group, against its pod cgroup's memory.events.
func TestKubelet(t *testing.T) {
	if os.Getenv("PODCHRON_VM") != "1" {
		t.Skip("PODCHRON_VM!=1: this test is meant to run in the podchron VM (make test-vm-kubelet)")
	}
	checkNode(t)
	if err := cluster.CheckRequirements(k8sBin); err != nil {
		t.Fatalf("%v (make test-vm-kubelet puts the 1.37 leg's binaries at %s)", err, k8sBin)
	}
	if _, err := os.Stat(tracerBin); err != nil {
		t.Fatalf("%v (make test-vm-kubelet puts the tracer there)", err)
	}
	// Under TCG the control plane starts in ~2 min, not the host's 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	log := containerd.TestLogger(t, slog.LevelInfo)
	work, err := os.MkdirTemp("/tmp", "ptk-")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cgRoot := "/kubepods"
	if driver == containerd.CgroupDriverSystemd {
		cgRoot = "/kubepods.slice"
	}
	h, err := containerd.New(ctx, containerd.Config{
		CgroupDriver: driver, CgroupRoot: cgRoot,
		BaseDir: work, Logger: log, Containerd: "/usr/bin/containerd",
	})
	if err != nil {
		t.Fatalf("containerd: %v", err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer ccancel()
		if err := h.Close(cctx); err != nil {
			t.Errorf("containerd teardown: %v", err)
		}
	})
	c, err := cluster.Start(ctx, cluster.Config{BinDir: k8sBin, WorkDir: filepath.Join(work, "k8s"), Runtime: h, Logger: log})
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer ccancel()
		if err := c.Close(cctx); err != nil {
			t.Errorf("cluster teardown: %v", err)
		}
	})
	t.Logf("cluster up in %s", time.Since(start).Round(100*time.Millisecond))
	if out, err := os.ReadFile(filepath.Join(work, "k8s", "kubelet.yaml")); err != nil || !bytes.Contains(out, []byte("cgroupDriver: "+driver+"\n")) {
		t.Fatalf("the kubelet's config does not ask for the %s driver (%v):\n%s", driver, err, out)
	}

	// The tracer, as the DaemonSet runs it but as a process: the API
	// server, CRI and the probes; spans as JSON lines on its stdout.
	tctx, tcancel := context.WithCancel(ctx)
	tracer := exec.CommandContext(tctx, tracerBin, "-kubeconfig", c.Kubeconfig, "-node-name", c.NodeName(),
		"-runtime-endpoint", h.Endpoint, "-output", "json", "-metrics-addr", metricsAddr,
		"-state-dir", filepath.Join(work, "state"))
	tracer.Cancel = func() error { return tracer.Process.Signal(unix.SIGTERM) }
	tracer.WaitDelay = 30 * time.Second
	// Its stderr goes to a file, written by the tracer itself (no copying
	// goroutine to race with), read when a failure shows it.
	errFile, err := os.Create(filepath.Join(work, "tracer.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	tracer.Stderr = errFile
	tracerErr := func() string {
		b, _ := os.ReadFile(errFile.Name())
		return string(b)
	}
	out, err := tracer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	got := &spans{}
	read := make(chan struct{})
	if err := tracer.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { defer close(read); got.read(out) }()
	stopTracer := func() {
		tcancel()
		<-read
		_ = tracer.Wait()
	}
	t.Cleanup(func() {
		stopTracer()
		if t.Failed() {
			t.Logf("tracer stderr:\n%s", tracerErr())
		}
	})
	if err := waitHTTP(ctx, "http://"+metricsAddr+"/readyz", 3*time.Minute); err != nil {
		t.Fatalf("tracer not ready: %v\n%s", err, tracerErr())
	}

	pod := `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  terminationGracePeriodSeconds: 30
  automountServiceAccountToken: false
  containers:
  - name: app
    image: ` + containerd.BusyboxImageName + `
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
    resources: {requests: {cpu: 10m, memory: 16Mi}}
    readinessProbe:
      exec: {command: ["/bin/true"]}
      periodSeconds: 2
`
	if out, err := c.KubectlIn(ctx, []byte(pod), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "wait", "--for=condition=Ready", "pod/web", "--timeout=5m"); err != nil {
		t.Fatalf("wait Ready: %v\n%s\nkubelet:\n%s", err, out, c.Logs("kubelet", 4000))
	}
	q, err := c.Kubectl(ctx, "get", "pod", "web", "-o", "jsonpath={.metadata.uid} {.status.qosClass} {.status.containerStatuses[0].containerID}")
	if err != nil {
		t.Fatalf("get pod: %v\n%s", err, q)
	}
	f := strings.Fields(string(q))
	if len(f) != 3 || !strings.HasPrefix(f[2], "containerd://") {
		t.Fatalf("pod web: uid, QoS and container ID are %q", q)
	}
	uid, qos, cid := f[0], f[1], strings.TrimPrefix(f[2], "containerd://")

	// The kubelet's layout, by the kernel's own files: the pod's cgroup in
	// its QoS class's, the container's in it, with processes.
	scope := "/sys/fs/cgroup" + containerCgroup(uid, cid)
	if qos != "Burstable" {
		t.Errorf("pod web's QoS class is %s, want Burstable (it has requests only)", qos)
	}
	if procs, err := os.ReadFile(scope + "/cgroup.procs"); err != nil || len(bytes.TrimSpace(procs)) == 0 {
		t.Fatalf("the container's cgroup %s: %q, %v", scope, procs, err)
	}

	// An OOM kill under the kubelet's own memory.oom.group=1 (cgroup v2,
	// singleProcessOOMKill off): a container whose second process
	// outgrows its limit while a first one sleeps beside it. A sidecar
	// keeps the pod running, so that the kubelet keeps its cgroup (and
	// the kernel's counters in it) after the kill.
	hungry := `apiVersion: v1
kind: Pod
metadata: {name: hungry, namespace: default}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  automountServiceAccountToken: false
  containers:
  - name: app
    image: ` + containerd.BusyboxImageName + `
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "sleep 1000 & sleep 2; dd if=/dev/zero of=/dev/null bs=256M count=1"]
    resources: {limits: {memory: 32Mi}}
  - name: sidecar
    image: ` + containerd.BusyboxImageName + `
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
`
	if out, err := c.KubectlIn(ctx, []byte(hungry), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply hungry: %v\n%s", err, out)
	}

	// A kubectl exec session: the kernel sees its process start in the
	// container's cgroup.
	if out, err := c.Kubectl(ctx, "exec", "web", "--", "/bin/sh", "-c", "echo podchron-exec-marker"); err != nil || !bytes.Contains(out, []byte("podchron-exec-marker")) {
		t.Fatalf("kubectl exec: %v\n%s", err, out)
	}
	time.Sleep(5 * time.Second) // a few more readiness probes

	// The kubelet's reason is containerd's, which takes it from an OOM
	// event; the kernel's counters below are the truth the trace is held
	// to.
	var hs []string
	for deadline := time.Now().Add(5 * time.Minute); ; {
		q, err := c.Kubectl(ctx, "get", "pod", "hungry", "-o", "jsonpath={.metadata.uid} {.status.qosClass}"+
			` {.status.containerStatuses[?(@.name=="app")].containerID}`+
			` {.status.containerStatuses[?(@.name=="app")].state.terminated.exitCode}`+
			` {.status.containerStatuses[?(@.name=="app")].state.terminated.reason}`)
		if hs = strings.Fields(string(q)); err == nil && len(hs) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod hungry's app not terminated after 5 min: %q, %v\nkubelet:\n%s", q, err, c.Logs("kubelet", 4000))
		}
		time.Sleep(2 * time.Second)
	}
	if hs[1] != "Burstable" || !strings.HasPrefix(hs[2], "containerd://") || hs[3] != "137" {
		t.Fatalf("pod hungry: uid, QoS, app's container ID, exit code and reason are %q, want a Burstable pod's container killed (137)", hs)
	}
	t.Logf("pod hungry: the kubelet says app's exit code %s, reason %s", hs[3], hs[4])
	huid, hcid := hs[0], strings.TrimPrefix(hs[2], "containerd://")
	// The pod's cgroup outlives the container's: its memory.events counts
	// the container's kills (hierarchically).
	hpod := podCgroup(huid)
	events, err := readKV("/sys/fs/cgroup" + hpod + "/memory.events")
	if err != nil {
		t.Fatal(err)
	}
	local, err := readKV("/sys/fs/cgroup" + hpod + "/memory.events.local")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod hungry: %s/memory.events %v, .local %v", hpod, events, local)
	// Whose limit ran out, by the kernel's own count: the pod cgroup's own
	// "oom" when it was the pod's (the kubelet gives a pod a limit when
	// each of its containers has one; the sidecar has none here).
	hctr := containerCgroup(huid, hcid)
	wantScope, wantMemcg := names.OOMScopeContainer, hctr
	if local["oom"] > 0 {
		wantScope, wantMemcg = names.OOMScopePod, hpod
	}
	if events["oom_group_kill"] < 1 || events["oom_kill"] < 2 {
		t.Errorf("pod hungry's memory.events: oom_kill %d, oom_group_kill %d; want a group kill of both processes (the kubelet's memory.oom.group=1)",
			events["oom_kill"], events["oom_group_kill"])
	}
	for _, p := range []string{"web", "hungry"} {
		if out, err := c.Kubectl(ctx, "delete", "pod", p, "--wait=true", "--timeout=3m"); err != nil {
			t.Fatalf("delete %s: %v\n%s", p, err, out)
		}
	}

	// The root span ends the trace; the tracer emits it once the pod is
	// gone from the API server and the runtime.
	deadline := time.Now().Add(3 * time.Minute)
	for _, u := range []string{uid, huid} {
		for len(named(got.of(u), names.SpanPod)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no root span for pod %s 3 min after its deletion; tracer stderr:\n%s", u, tracerErr())
			}
			time.Sleep(time.Second)
		}
	}
	metrics, merr := httpGet(ctx, "http://"+metricsAddr+"/metrics")
	stopTracer()
	trace := got.of(uid)
	for _, sp := range trace {
		t.Logf("span %-22s %8s %v", sp.Name, sp.Duration().Round(time.Millisecond), sp.Attrs)
	}
	if len(got.bad) > 0 {
		t.Errorf("%d lines of tracer output are not spans: %q", len(got.bad), got.bad)
	}

	root := named(trace, names.SpanPod)[0]
	if v := str(root, names.Verdict); !strings.Contains(v, "started in") || !strings.Contains(v, "terminated in") {
		t.Errorf("root verdict %q: want a start-up and a termination", v)
	}
	if v := str(root, names.QoSClass); v != qos {
		t.Errorf("root %s = %q, want %q", names.QoSClass, v, qos)
	}
	runs := named(trace, names.SpanContainerRun)
	if len(runs) != 1 || str(runs[0], names.ContainerID) != cid {
		t.Errorf("%d container.run spans, want one of container %s", len(runs), cid)
	}
	// Kernel facts from the container's cgroup: the exec probes and the
	// exec session.
	if n := len(named(trace, names.SessionProbeReadiness)); n == 0 {
		t.Error("no probe.readiness span: the kernel's exec of the probe in the container's cgroup was not told")
	}
	execs := named(trace, names.SpanContainerExec)
	sawMarker := false
	for _, e := range execs {
		if strings.Contains(fmt.Sprint(e.Attr(names.ProcessCommandArgs)), "podchron-exec-marker") {
			sawMarker = true
		}
	}
	if !sawMarker {
		t.Errorf("no container.exec span for the kubectl exec (%d container.exec spans)", len(execs))
	}
	// The SIGTERM at deletion: a kernel fact, its sender the runtime.
	stops := named(trace, names.SpanContainerStop)
	if len(stops) != 1 {
		t.Fatalf("%d container.stop spans, want 1", len(stops))
	}
	if s := stops[0]; str(s, names.SignalName) != "SIGTERM" || str(s, names.SignalSenderKind) != string(names.SenderRuntime) || s.Attr(names.Sigkill) != false {
		t.Errorf("container.stop: signal %q from %q, sigkill %v; want SIGTERM from the runtime, no SIGKILL",
			str(s, names.SignalName), str(s, names.SignalSenderKind), s.Attr(names.Sigkill))
	}
	// Nothing of the pod's was counted as a miss (the model puts each on
	// the root as an event), and the node's misses, if any, are shown.
	for _, ev := range root.Events {
		if ev.Name == names.EventCorrelationMiss {
			t.Errorf("a correlation miss on pod web: %v", ev.Attrs)
		}
	}
	if merr != nil {
		t.Errorf("tracer /metrics: %v", merr)
	}
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "podchron_correlation_misses_total{") && !strings.HasSuffix(l, "} 0") {
			t.Logf("node: %s", l)
		}
	}
	t.Logf("pod web traced through the kubelet's %s driver: %d spans, %s", driver, len(trace), str(root, names.Verdict))
	checkOOM(t, got.of(huid), wantScope, wantMemcg, events["oom_kill"])
	checkOOMReason(t, got.of(huid), hs[4], metrics)
}

// checkOOMReason holds pod hungry's root against the kubelet's reason for
// app's end: when it is not OOMKilled (containerd missed the OOM event the
// kernel's counters show), the root tells it once, its verdict says so,
// and podchron_oom_kills_misreported_total counts it; when it is
// OOMKilled, none of them does.
func checkOOMReason(t *testing.T, trace []span.Span, kubeletReason, metrics string) {
	t.Helper()
	root := named(trace, names.SpanPod)[0]
	var told []span.SpanEvent
	for _, ev := range root.Events {
		if ev.Name == names.EventOOMMisreported {
			told = append(told, ev)
		}
	}
	verdict := str(root, names.Verdict)
	counted := func(reason string) string {
		prefix := `podchron_oom_kills_misreported_total{namespace="default",reason="` + reason + `"} `
		for _, l := range strings.Split(metrics, "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				return v
			}
		}
		return "absent"
	}
	if kubeletReason == cri.ReasonOOMKilled {
		if len(told) != 0 || strings.Contains(verdict, "the kubelet said") || counted(cri.ReasonError) != "0" {
			t.Errorf("pod hungry: the kubelet said OOMKilled, yet a misreport is told: %v, verdict %q, metric (Error) %s",
				told, verdict, counted(cri.ReasonError))
		}
		return
	}
	t.Logf("pod hungry: the kubelet said %s for the kernel's OOM kill; the root: %v", kubeletReason, told)
	if len(told) != 1 || span.Lookup(told[0].Attrs, names.K8sContainerStatusLastTerminatedReason) != kubeletReason ||
		span.Lookup(told[0].Attrs, names.K8sContainerName) != "app" {
		t.Errorf("pod hungry: the kubelet said %s for an OOM kill; the root's %s events: %v, want one of app's with that reason",
			kubeletReason, names.EventOOMMisreported, told)
	}
	if !strings.Contains(verdict, "the kubelet said "+kubeletReason) {
		t.Errorf("pod hungry's verdict %q does not tell the kubelet's %s", verdict, kubeletReason)
	}
	if v := counted(kubeletReason); v != "1" {
		t.Errorf("podchron_oom_kills_misreported_total for %s: %s, want 1", kubeletReason, v)
	}
}

// checkOOM holds pod hungry's trace against the kernel: its one run ended
// by the OOM killer, whose memory cgroup (scope, memcg) the kernel's
// memory.events.local named, and one oom_kill event per process killed.
// The kernel's oom_kill counts the victim twice in a group kill (once as
// the victim, once as a member of its group), the trace once: 2 (dd and
// the sleep beside it) up to that count, each a distinct pid.
func checkOOM(t *testing.T, trace []span.Span, wantScope, wantMemcg string, kills int) {
	t.Helper()
	for _, sp := range trace {
		t.Logf("hungry: span %-22s %8s %v %v", sp.Name, sp.Duration().Round(time.Millisecond), sp.Attrs, sp.Events)
	}
	var runs []span.Span
	for _, r := range named(trace, names.SpanContainerRun) {
		if str(r, names.K8sContainerName) == "app" {
			runs = append(runs, r)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("pod hungry: %d container.run spans of app, want 1", len(runs))
	}
	r := runs[0]
	if c := str(r, names.ExitCause); c != string(names.CauseOOMKilled) {
		t.Errorf("pod hungry's run: exit cause %q, want %s", c, names.CauseOOMKilled)
	}
	if sc, mc := str(r, names.OOMScope), str(r, names.OOMMemcg); sc != wantScope || mc != wantMemcg {
		t.Errorf("pod hungry's run: OOM scope %q, memcg %q; want %s, %s", sc, mc, wantScope, wantMemcg)
	}
	pids := map[any]bool{}
	for _, ev := range r.Events {
		if ev.Name != names.EventOOMKill {
			continue
		}
		pid := span.Lookup(ev.Attrs, names.OOMVictimPID)
		if pids[pid] {
			t.Errorf("pod hungry: pid %v's oom_kill told twice", pid)
		}
		pids[pid] = true
		if sc, mc := span.Lookup(ev.Attrs, names.OOMScope), span.Lookup(ev.Attrs, names.OOMMemcg); sc != wantScope || mc != wantMemcg {
			t.Errorf("pod hungry: an oom_kill event of scope %v, memcg %v; want %s, %s", sc, mc, wantScope, wantMemcg)
		}
	}
	if n := len(pids); n < 2 || n > kills {
		t.Errorf("pod hungry's run: oom_kill events of %d distinct pids; want a group kill: 2 to the kernel's %d", n, kills)
	}
	if v := str(named(trace, names.SpanPod)[0], names.Verdict); !strings.Contains(v, "OOM-killed") {
		t.Errorf("pod hungry's verdict %q does not tell the OOM kill", v)
	}
}

// readKV reads a cgroup "key value" file.
func readKV(path string) (map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	m := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var k string
		var v int
		if _, err := fmt.Sscan(l, &k, &v); err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", path, l, err)
		}
		m[k] = v
	}
	return m, nil
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), nil
}

func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cluster.HTTPOK(ctx, url, nil)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
