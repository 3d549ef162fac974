package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/podchron/podchron/test/e2e/backends"
	"github.com/podchron/podchron/test/e2e/cluster"
	"github.com/podchron/podchron/test/harness/containerd"
)

// env is everything the scenarios share: a real cluster on a real
// containerd, Jaeger behind an OpenTelemetry Collector, Prometheus, and
// podchron installed with its Helm chart (the same DaemonSet as
// deploy/daemonset.yaml).
type env struct {
	ctx      context.Context
	repo     string
	work     string
	log      *slog.Logger
	runtime  *containerd.Harness
	cluster  *cluster.Cluster
	cs       *kubernetes.Clientset
	jaeger   *backends.Jaeger
	otelcol  *backends.Collector // the tracer's OTLP endpoint, exporting to Jaeger
	prom     *backends.Prometheus
	manifest []byte      // the manifests Helm installed (helm get manifest)
	outage   outageDrops // what scenario 59 dropped on purpose

	failMu   sync.Mutex
	failures []string // each failed wait's first line (fatalf), repeated at the run's end
}

const (
	podchronNS    = "podchron"
	metricsTarget = "127.0.0.1:9464"
	// The image deploy/daemonset.yaml names; deploy/build-image.sh builds
	// and imports it under this name, so the manifest's image is unchanged.
	podchronImage = "ghcr.io/podchron/podchron:dev"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// setup brings the whole environment up; t.Cleanup tears it down and
// checks that the host was restored.
func setup(t *testing.T) *env {
	binDir := os.Getenv("PODCHRON_E2E_BIN")
	if binDir == "" {
		t.Skip("PODCHRON_E2E_BIN is not set: `make e2e` builds Kubernetes and Jaeger and runs this test")
	}
	if testing.Short() {
		t.Skip("-short: skipping the cluster end-to-end test")
	}
	if err := cluster.CheckRequirements(binDir); err != nil {
		t.Fatalf("PODCHRON_E2E_BIN is set but the cluster cannot run: %v", err)
	}
	for _, b := range []string{"jaeger", "otelcol"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			t.Fatalf("PODCHRON_E2E_BIN is set but has no %s: %v", b, err)
		}
	}
	if err := containerd.CheckRequirements(); err != nil {
		t.Fatalf("containerd harness: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{ctx: ctx, repo: repoRoot(t), log: containerd.TestLogger(t, slog.LevelInfo)}
	work, err := os.MkdirTemp("/tmp", "pte2e-")
	if err != nil {
		t.Fatal(err)
	}
	e.work = work
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("e2e work directory kept for inspection: %s", work)
			return
		}
		_ = os.RemoveAll(work)
	})

	// 1. containerd (kubelet cgroupfs layout under /kubepods).
	t0 := time.Now()
	h, err := containerd.New(ctx, containerd.Config{CgroupRoot: "/kubepods", BaseDir: work, Logger: e.log, Containerd: stackContainerd(binDir)})
	if err != nil {
		t.Fatalf("containerd: %v", err)
	}
	e.runtime = h
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := h.Close(cctx); err != nil {
			t.Errorf("containerd teardown: %v", err)
		}
	})

	// 2. podchron's image, from the same build the Dockerfile does.
	out, err := runCmd(ctx, e.repo, []string{"IMAGE=" + podchronImage, "OUT=" + filepath.Join(work, "podchron-image.tar"),
		"CONTAINERD_ADDRESS=" + h.Socket}, "bash", "deploy/build-image.sh", "--import")
	if err != nil {
		t.Fatalf("deploy/build-image.sh --import: %v\n%s", err, out)
	}

	// 3. Jaeger behind an OpenTelemetry Collector (the tracer's endpoint,
	// as users run it), and Prometheus.
	j, err := backends.StartJaeger(ctx, e.log, filepath.Join(binDir, "jaeger"), work, backends.DefaultJaegerPorts)
	if err != nil {
		t.Fatalf("jaeger: %v", err)
	}
	e.jaeger = j
	t.Cleanup(func() { _ = j.Close() })
	oc, err := backends.StartCollector(ctx, e.log, filepath.Join(binDir, "otelcol"), work, backends.DefaultCollectorPorts,
		map[string]string{"jaeger": j.OTLPGRPC})
	if err != nil {
		t.Fatalf("otelcol: %v", err)
	}
	e.otelcol = oc
	t.Cleanup(func() { _ = oc.Close() })
	p, err := backends.StartPrometheus(ctx, e.log, work, backends.PrometheusConfig{
		Targets:   []string{metricsTarget},
		RuleFiles: []string{filepath.Join(e.repo, "deploy", "rules", "podchron.rules.yml")},
	})
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	e.prom = p
	t.Cleanup(func() { _ = p.Close() })

	// 4. The cluster.
	c, err := cluster.Start(ctx, cluster.Config{BinDir: binDir, WorkDir: filepath.Join(work, "k8s"), Runtime: h, Logger: e.log,
		Gates: stackGates[os.Getenv("PODCHRON_E2E_STACK")]})
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	e.cluster = c
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := c.Close(cctx); err != nil {
			t.Errorf("cluster teardown: %v", err)
		}
	})
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	e.cs, err = kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster, containerd, Jaeger and Prometheus up in %s", time.Since(t0).Round(time.Millisecond))
	e.logVersions(t)

	// 5. podchron, with its Helm chart as users install it.
	e.deployPodchron(t)
	return e
}

// stackContainerd is the containerd the stack in binDir runs
// (test/e2e/tools/build.sh with PODCHRON_E2E_STACK=k8s137-containerd2 puts
// one there), else "": the harness's default, Debian's.
func stackContainerd(binDir string) string {
	p := filepath.Join(binDir, "containerd")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// stackGates are the alpha feature gates each stack's cluster switches on
// for the scenarios that need them: ContainerStopSignals (alpha since
// 1.33, still in 1.37: lifecycle.stopSignal, e2e 56) on the 1.37 leg and
// the hand-run 1.36 stack; the 1.35 leg keeps its defaults (see
// cluster.WantedGates for why).
var stackGates = map[string][]string{
	"k8s136-containerd2": {"ContainerStopSignals"},
	"k8s137-containerd2": {"ContainerStopSignals"},
}

// logVersions prints, at the start of the run, which stack this leg is:
// the API server's, the kubelet's and the container runtime's versions as
// the cluster reports them, and the OCI runtime and kernel.
func (e *env) logVersions(t *testing.T) {
	t.Helper()
	sv, err := e.cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("API server version: %v", err)
	}
	nodes, err := e.cs.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("nodes: %v", err)
	}
	if len(nodes.Items) == 0 {
		t.Fatal("no node")
	}
	ni := nodes.Items[0].Status.NodeInfo
	t.Logf("e2e stack %q: kube-apiserver %s, kubelet %s, container runtime %s (%s), OCI runtime %s, kernel %s",
		os.Getenv("PODCHRON_E2E_STACK"), sv.GitVersion, ni.KubeletVersion, ni.ContainerRuntimeVersion,
		e.runtime.Versions.Containerd, e.runtime.Versions.Runtime, ni.KernelVersion)
}

func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

// deployPodchron installs podchron with its Helm chart
// (deploy/helm/podchron), as users install it, with values for this
// cluster's endpoints only: the same changes patchForCluster makes to
// `kubectl kustomize deploy/`. Before the scenarios run it checks that the
// DaemonSet Helm installed is that patched kustomize DaemonSet (but for
// Helm's labels and the OTLP headers), so what they prove holds for
// `kubectl apply -k deploy/` too. It waits for the tracer to be ready and
// scraped.
func (e *env) deployPodchron(t *testing.T) {
	t.Helper()
	helm := os.Getenv("PODCHRON_HELM")
	if helm == "" {
		t.Fatal("PODCHRON_HELM is not set: `make e2e` builds Helm (scripts/build-helm.sh) and sets it")
	}
	// The namespace, with its Pod Security level, as deploy/ has it (the
	// chart installs into an existing namespace).
	if out, err := e.cluster.Kubectl(e.ctx, "apply", "-f", filepath.Join(e.repo, "deploy", "namespace.yaml")); err != nil {
		t.Fatalf("kubectl apply deploy/namespace.yaml: %v\n%s", err, out)
	}
	// OTLP headers from a Secret (Jaeger ignores them; the tracer starts
	// only if the Secret's key resolves).
	if out, err := e.cluster.Kubectl(e.ctx, "-n", podchronNS, "create", "secret", "generic", otlpHeadersSecret,
		"--from-literal=headers="+otlpHeaders); err != nil {
		t.Fatalf("OTLP headers secret: %v\n%s", err, out)
	}
	values, err := yaml.Marshal(helmValuesForCluster(e.cluster.APIPort(), backends.DefaultCollectorPorts.OTLPGRPC, e.runtime.RuntimeDir, e.stateDir()))
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(e.work, "podchron-values.yaml")
	if err := os.WriteFile(valuesFile, values, 0o600); err != nil {
		t.Fatal(err)
	}
	helmCmd := func(args ...string) []byte {
		t.Helper()
		args = append(args, "--kubeconfig", e.cluster.Kubeconfig)
		out, err := runCmd(e.ctx, e.repo, []string{"HELM_CACHE_HOME=" + filepath.Join(e.work, "helm", "cache"),
			"HELM_CONFIG_HOME=" + filepath.Join(e.work, "helm", "config"), "HELM_DATA_HOME=" + filepath.Join(e.work, "helm", "data")},
			helm, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	t0 := time.Now()
	out := helmCmd("install", "podchron", filepath.Join(e.repo, "deploy", "helm", "podchron"),
		"--namespace", podchronNS, "--values", valuesFile)
	t.Logf("helm install (%s):\n%s", time.Since(t0).Round(time.Millisecond), out)
	e.manifest = helmCmd("get", "manifest", "podchron", "--namespace", podchronNS)
	if err := os.WriteFile(filepath.Join(e.work, "podchron-deploy.yaml"), e.manifest, 0o600); err != nil {
		t.Fatal(err)
	}

	rendered, err := e.cluster.Kubectl(e.ctx, "kustomize", filepath.Join(e.repo, "deploy"))
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/: %v", err)
	}
	patched, err := patchForCluster(rendered, e.cluster.APIPort(), backends.DefaultCollectorPorts.OTLPGRPC, e.runtime.RuntimeDir, e.stateDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := sameDaemonSet(patched, e.manifest); err != nil {
		t.Fatalf("the DaemonSet helm installed is not the patched kustomize one: %v", err)
	}
	e.waitTracerReady(t, "")
}

// stateDir is the tracer's checkpoint directory on the node for this run
// (patchForCluster).
func (e *env) stateDir() string { return filepath.Join(e.work, "podchron-state") }

const (
	otlpHeadersSecret = "podchron-otlp"
	otlpHeaders       = "x-podchron-e2e=helm"
)

// tracerArgs are the tracer's flags in this cluster: the start-up give-up
// time (45 s instead of 10 min, so a pod that never becomes Ready shows its
// failed start-up within a scenario), what scenario 29 checks (the
// cluster's name, an exported pod label, an excluded namespace), and an
// Event TTL of a minute (the API server keeps its default hour): the
// cluster is minutes old, and scenario 8 restarts the tracer with a pod
// unchanged for longer than that, whose Events it then does not list.
var tracerArgs = []string{"--startup-timeout=45s", "--cluster-name=" + clusterName, "--pod-label=app",
	"--namespace-exclude=" + excludedNamespace, "--event-ttl=" + e2eEventTTL.String()}

// e2eEventTTL is the tracers' --event-ttl here (see tracerArgs).
const e2eEventTTL = time.Minute

const (
	clusterName       = "e2e"
	excludedNamespace = "s29-excluded"
)

// helmValuesForCluster are the chart values for what patchForCluster
// changes, plus the OTLP headers from otlpHeadersSecret.
func helmValuesForCluster(apiPort, otlpPort int, runtimeDir, stateDir string) map[string]any {
	return map[string]any{
		"hostNetwork": true,
		"otlp": map[string]any{
			"endpoint": fmt.Sprintf("http://127.0.0.1:%d", otlpPort),
			"headers":  map[string]any{"secretName": otlpHeadersSecret},
		},
		"extraArgs": tracerArgs,
		"extraEnv": []corev1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
			{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(apiPort)},
		},
		"runtime":       map[string]any{"hostPath": runtimeDir},
		"stateHostPath": stateDir,
	}
}

// sameDaemonSet compares the DaemonSet of a patched kustomize rendering
// with Helm's: the same but for Helm's labels (deploy/helm_test.go lists
// them) and OTEL_EXPORTER_OTLP_HEADERS, which must come from
// otlpHeadersSecret.
func sameDaemonSet(kustomized, helmManifest []byte) error {
	find := func(stream []byte) (*appsv1.DaemonSet, error) {
		for _, doc := range bytes.Split(stream, []byte("\n---")) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, err
			}
			if meta.Kind == "DaemonSet" {
				var ds appsv1.DaemonSet
				if err := yaml.UnmarshalStrict(doc, &ds); err != nil {
					return nil, err
				}
				return &ds, nil
			}
		}
		return nil, errors.New("no DaemonSet")
	}
	kz, err := find(kustomized)
	if err != nil {
		return fmt.Errorf("kustomize: %w", err)
	}
	hm, err := find(helmManifest)
	if err != nil {
		return fmt.Errorf("helm: %w", err)
	}
	for _, labels := range []map[string]string{hm.Labels, hm.Spec.Template.Labels} {
		for _, l := range []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"} {
			delete(labels, l)
		}
	}
	c := &hm.Spec.Template.Spec.Containers[0]
	found := false
	for i, ev := range c.Env {
		if ev.Name == "OTEL_EXPORTER_OTLP_HEADERS" {
			if r := ev.ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != otlpHeadersSecret {
				return fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS = %+v, want it from secret %s", ev, otlpHeadersSecret)
			}
			c.Env = append(c.Env[:i:i], c.Env[i+1:]...)
			found = true
			break
		}
	}
	if !found {
		return errors.New("no OTEL_EXPORTER_OTLP_HEADERS")
	}
	if !reflect.DeepEqual(kz.ObjectMeta, hm.ObjectMeta) || !reflect.DeepEqual(kz.Spec, hm.Spec) {
		kb, _ := yaml.Marshal(kz)
		hb, _ := yaml.Marshal(hm)
		return fmt.Errorf("kustomize:\n%s\nhelm:\n%s", kb, hb)
	}
	return nil
}

// TestHelmValuesForCluster checks, without a cluster, what deployPodchron
// checks on one: the chart with helmValuesForCluster renders the DaemonSet
// of `kubectl kustomize deploy/` patched by patchForCluster. It needs
// $PODCHRON_HELM (set by make) and a kubectl (the e2e's, or one on PATH).
func TestHelmValuesForCluster(t *testing.T) {
	helm := os.Getenv("PODCHRON_HELM")
	if helm == "" {
		t.Skip("PODCHRON_HELM is not set: make builds Helm (scripts/build-helm.sh) and sets it")
	}
	kubectl := filepath.Join(os.Getenv("PODCHRON_E2E_BIN"), "kubectl")
	if _, err := os.Stat(kubectl); os.Getenv("PODCHRON_E2E_BIN") == "" || err != nil {
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("no kubectl: cannot render deploy/ with kustomize")
		}
	}
	repo := repoRoot(t)
	const apiPort, otlpPort, runtimeDir, stateDir = 16443, 14317, "/tmp/pte2e-x/containerd", "/tmp/pte2e-x/podchron-state"
	values, err := yaml.Marshal(helmValuesForCluster(apiPort, otlpPort, runtimeDir, stateDir))
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, values, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	home := t.TempDir()
	manifest, err := runCmd(ctx, repo, []string{"HELM_CACHE_HOME=" + home, "HELM_CONFIG_HOME=" + home, "HELM_DATA_HOME=" + home},
		helm, "template", "podchron", filepath.Join("deploy", "helm", "podchron"), "--namespace", podchronNS, "--values", valuesFile, "--kube-version", "1.35.0")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, manifest)
	}
	rendered, err := runCmd(ctx, repo, nil, kubectl, "kustomize", "deploy")
	if err != nil {
		t.Fatalf("kubectl kustomize deploy: %v\n%s", err, rendered)
	}
	patched, err := patchForCluster(rendered, apiPort, otlpPort, runtimeDir, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameDaemonSet(patched, manifest); err != nil {
		t.Error(err)
	}
}

// patchForCluster changes what deploy/daemonset.yaml cannot know about this
// cluster, and nothing else:
//   - the API server: this cluster has no kube-proxy, so the ClusterIP
//     10.96.0.1 is unreachable; the tracer uses host networking and the API
//     server's loopback address (KUBERNETES_SERVICE_HOST/PORT, which
//     in-cluster config reads);
//   - the OTLP endpoint: the collector on loopback;
//   - the runtime socket directory: the test's private containerd;
//   - the checkpoint's directory: the run's own (a node's /var/lib/podchron
//     outlives the run; a CI machine that ran the suite before would hand
//     the new cluster's tracer the old run's span IDs);
//   - the start-up give-up time (--startup-timeout 45s instead of 10m: room for a start-up on a loaded node running ~45 scenarios at once), so a
//     pod that never becomes Ready shows its failed start-up within a
//     scenario.
func patchForCluster(rendered []byte, apiPort, otlpPort int, runtimeDir, stateDir string) ([]byte, error) {
	var out [][]byte
	for _, doc := range bytes.Split(rendered, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("rendered manifest: %w", err)
		}
		if meta.Kind != "DaemonSet" {
			out = append(out, doc)
			continue
		}
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(doc, &ds); err != nil {
			return nil, fmt.Errorf("daemonset: %w", err)
		}
		spec := &ds.Spec.Template.Spec
		spec.HostNetwork = true
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		c := &spec.Containers[0]
		if c.Image != podchronImage {
			return nil, fmt.Errorf("daemonset image %q, want %q", c.Image, podchronImage)
		}
		found := false
		for i := range c.Env {
			if c.Env[i].Name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
				c.Env[i].Value = fmt.Sprintf("http://127.0.0.1:%d", otlpPort)
				found = true
			}
		}
		if !found {
			return nil, errors.New("daemonset has no OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		c.Args = append(c.Args, tracerArgs...)
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(apiPort)})
		for vol, dir := range map[string]string{"runtime": runtimeDir, "state": stateDir} {
			found = false
			for i := range spec.Volumes {
				if spec.Volumes[i].Name == vol && spec.Volumes[i].HostPath != nil {
					spec.Volumes[i].HostPath.Path = dir
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("daemonset has no %s hostPath volume", vol)
			}
		}
		b, err := yaml.Marshal(&ds)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return bytes.Join(out, []byte("\n---\n")), nil
}

// tracerPod returns the running tracer pod (other than notName).
func (e *env) tracerPod(notName string) (*corev1.Pod, error) {
	pods, err := e.cs.CoreV1().Pods(podchronNS).List(e.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=podchron"})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Name != notName && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, errors.New("no tracer pod")
}

// waitTracerReady waits for a tracer pod (other than notName) to be Ready
// and for Prometheus to scrape it.
func (e *env) waitTracerReady(t *testing.T, notName string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	e.eventually(t, "tracer pod Ready", 3*time.Minute, func() error {
		p, err := e.tracerPod(notName)
		if err != nil {
			return err
		}
		if !podReady(p) {
			return fmt.Errorf("tracer pod %s not ready: %s", p.Name, podSummary(p))
		}
		pod = p
		return nil
	})
	e.eventually(t, "Prometheus scraping the tracer", time.Minute, func() error {
		s, err := e.prom.Query(e.ctx, `up{job="podchron"}`)
		if err != nil {
			return err
		}
		if len(s) != 1 || s[0].Value != 1 {
			return fmt.Errorf("up{job=podchron} = %v", s)
		}
		return nil
	})
	return pod
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podSummary(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s", p.Status.Phase)
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		if w := cs.State.Waiting; w != nil {
			fmt.Fprintf(&b, " waiting=%s %s", w.Reason, w.Message)
		}
		if r := cs.State.Terminated; r != nil {
			fmt.Fprintf(&b, " terminated=%s(%d)", r.Reason, r.ExitCode)
		}
		b.WriteString("]")
	}
	return b.String()
}

// eventually polls f until it returns nil; on timeout the test fails with
// f's last error and the components' logs.
func (e *env) eventually(t *testing.T, what string, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = f(); last == nil {
			return
		}
		if time.Now().After(deadline) || e.ctx.Err() != nil {
			e.dumpLogs(t)
			e.fatalf(t, "%s: not after %s: %v", what, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fatalf fails t with the message, keeps its first line for the run's
// summary (logFailures) and writes the whole of it to failures/<test>.txt
// in the work directory, which a failed run keeps: a CI log shows only its
// tail, and a scenario's message with its trace comes out minutes before.
func (e *env) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	first, _, _ := strings.Cut(msg, "\n")
	e.failMu.Lock()
	e.failures = append(e.failures, t.Name()+": "+first)
	e.failMu.Unlock()
	dir := filepath.Join(e.work, "failures")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + ".txt"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(msg+"\n"), 0o644); err != nil {
			t.Logf("keep the failure: %v", err)
		}
	}
	t.Fatal(msg)
}

// logFailures repeats each failed wait's first line at the end of the run.
func (e *env) logFailures(t *testing.T) {
	t.Helper()
	e.failMu.Lock()
	defer e.failMu.Unlock()
	if len(e.failures) == 0 {
		return
	}
	t.Logf("%d scenario(s) failed (whole messages with their traces: %s):\n  %s", len(e.failures),
		filepath.Join(e.work, "failures"), strings.Join(e.failures, "\n  "))
}

// dumpLogs prints what a failing scenario needs: the tracer's log and the
// tails of the kubelet's, containerd's and Jaeger's.
func (e *env) dumpLogs(t *testing.T) {
	t.Helper()
	if p, err := e.tracerPod(""); err == nil {
		out, _ := e.cluster.Kubectl(e.ctx, "logs", "-n", podchronNS, p.Name, "--tail=80")
		t.Logf("tracer %s log (tail):\n%s", p.Name, out)
		out, _ = e.cluster.Kubectl(e.ctx, "logs", "-n", podchronNS, p.Name, "--previous", "--tail=40")
		if len(out) > 0 {
			t.Logf("tracer %s previous log (tail):\n%s", p.Name, out)
		}
	}
	t.Logf("kubelet log (tail):\n%s", e.cluster.Logs("kubelet", 3000))
	t.Logf("containerd log (tail):\n%s", e.runtime.ContainerdLog(2000))
	t.Logf("otelcol log (tail):\n%s", e.otelcol.Log(1000))
	t.Logf("jaeger log (tail):\n%s", e.jaeger.Log(1500))
}

// trace polls Jaeger for the pod's trace until check accepts it; on
// timeout the test fails with the trace as Jaeger has it.
func (e *env) trace(t *testing.T, uid string, timeout time.Duration, check func(*backends.Trace) error) *backends.Trace {
	t.Helper()
	id := span.TraceIDForPod(uid).String()
	var tr *backends.Trace
	deadline := time.Now().Add(timeout)
	for {
		got, err := e.jaeger.Trace(e.ctx, id)
		if err == nil {
			tr = got
			if err = check(got); err == nil {
				return got
			}
		}
		if time.Now().After(deadline) {
			e.dumpLogs(t)
			// What the model counted as not emitted says why a span is
			// missing (the kept work directory has the tracer's log).
			e.fatalf(t, "trace %s (pod %s) in Jaeger: %v\n%s\n%s", id, uid, err, tr, e.misses())
		}
		time.Sleep(time.Second)
	}
}

// misses says what the model counted as not emitted, by reason, the
// kernel events lost, and how many inputs waited in the model's queue, as
// Prometheus has them now: why a span is missing.
func (e *env) misses() string {
	var out []string
	for _, q := range []struct{ expr, by string }{
		// Every reason is exported from 0: name those that counted.
		{`sum by (reason) (podchron_correlation_misses_total) > 0`, "reason"},
		{`sum by (type) (podchron_probe_events_lost_total)`, "type"},
		// How far behind its sources the model fell: the inputs it
		// handled, and those that waited over 100 ms and over 1 s
		// (Prometheus 3 spells a whole bound "1.0").
		{`sum by (node) (podchron_pipeline_queue_delay_seconds_count)`, "node"},
		{`sum by (node) (podchron_pipeline_queue_delay_seconds_count) - sum by (node) (podchron_pipeline_queue_delay_seconds_bucket{le="0.1"})`, "node"},
		{`sum by (node) (podchron_pipeline_queue_delay_seconds_count) - sum by (node) (podchron_pipeline_queue_delay_seconds_bucket{le=~"1|1.0"})`, "node"},
	} {
		s, err := e.prom.Query(e.ctx, q.expr)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", q.expr, err))
			continue
		}
		slices.SortFunc(s, func(a, b backends.Sample) int { return strings.Compare(a.Labels[q.by], b.Labels[q.by]) })
		parts := make([]string, 0, len(s))
		for _, x := range s {
			parts = append(parts, fmt.Sprintf("%s %.0f", x.Labels[q.by], x.Value))
		}
		out = append(out, q.expr+": "+strings.Join(parts, ", "))
	}
	return strings.Join(out, "; ")
}

// alert waits for a Prometheus alert in state ("firing" or "pending")
// whose labels include match.
func (e *env) alert(t *testing.T, name, state string, match map[string]string, timeout time.Duration) backends.Alert {
	t.Helper()
	var found backends.Alert
	e.eventually(t, "alert "+name+" "+state, timeout, func() error {
		alerts, err := e.prom.Alerts(e.ctx)
		if err != nil {
			return err
		}
	next:
		for _, a := range alerts {
			if a.Name != name || a.State != state {
				continue
			}
			for k, v := range match {
				if a.Labels[k] != v {
					continue next
				}
			}
			found = a
			return nil
		}
		return fmt.Errorf("alerts now: %v", alertNames(alerts))
	})
	return found
}

func alertNames(as []backends.Alert) []string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s{%s}=%s", a.Name, a.Labels["namespace"], a.State))
	}
	return out
}

// metric waits for a PromQL expression to return a sample accepted by ok.
func (e *env) metric(t *testing.T, q string, timeout time.Duration, ok func(float64) bool) float64 {
	t.Helper()
	var v float64
	e.eventually(t, "Prometheus "+q, timeout, func() error {
		s, err := e.prom.Query(e.ctx, q)
		if err != nil {
			return err
		}
		for _, x := range s {
			if ok(x.Value) {
				v = x.Value
				return nil
			}
		}
		return fmt.Errorf("%s = %v", q, s)
	})
	return v
}
