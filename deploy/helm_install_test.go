package deploy

// The chart installed for real, with Helm 3 and Helm 4, into a real API
// server: etcd (Debian's etcd-server) and kube-apiserver from
// $PODCHRON_KUBE_BIN (test/e2e/tools/build.sh kubernetes, which `make test`
// runs), on free loopback ports, certificates made as test/scale makes
// them. No controller-manager, scheduler or kubelet: what is checked is
// what Helm does (the chart's kubeVersion against the server's version,
// every object created, upgraded and deleted), not that the pods run (the
// e2e installs the chart into a whole cluster for that).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/podchron/podchron/test/e2e/cluster"
	"github.com/podchron/podchron/test/e2e/proc"
)

// apiServer is a running etcd + kube-apiserver.
type apiServer struct {
	kubeconfig string
	kubectl    string
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startAPIServer starts etcd and kube-apiserver from binDir; the test's
// cleanup stops both, by PID.
func startAPIServer(t *testing.T, binDir string) *apiServer {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var procs []*proc.Process
	t.Cleanup(func() {
		for i := len(procs) - 1; i >= 0; i-- {
			if t.Failed() {
				t.Logf("%s log tail:\n%s", procs[i].Name, procs[i].LogTail(3000))
			}
			if err := procs[i].Stop(15 * time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	start := func(name, bin string, args ...string) {
		p, err := proc.Start(log, name, filepath.Join(dir, "logs", name+".log"), bin, args...)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	kubeconfig, err := cluster.ControlPlanePKI(filepath.Join(dir, "pki"), server)
	if err != nil {
		t.Fatal(err)
	}
	etcd := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	start("etcd", "etcd", "--name=helm", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcd, "--advertise-client-urls="+etcd,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=helm="+peer, "--unsafe-no-fsync", "--log-level=warn")
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	start("kube-apiserver", filepath.Join(binDir, "kube-apiserver"),
		"--etcd-servers="+etcd, "--bind-address=127.0.0.1", "--secure-port="+server[strings.LastIndex(server, ":")+1:],
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none", "--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--tls-cert-file="+pki("apiserver.crt"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local", "--profiling=false")
	waitReady(t, server+"/readyz", pki, procs)
	return &apiServer{kubeconfig: kubeconfig, kubectl: filepath.Join(binDir, "kubectl")}
}

// waitReady waits up to 3 minutes (a loaded CI machine) for the API
// server's /readyz, failing at once if a process exits.
func waitReady(t *testing.T, url string, pki func(string) string, procs []*proc.Process) {
	t.Helper()
	ca, err := os.ReadFile(pki("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(pki("admin.crt"), pki("admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		last := cluster.HTTPOK(ctx, url, tlsCfg)
		if last == nil {
			return
		}
		for _, p := range procs {
			if done, err := p.Exited(); done {
				t.Fatalf("%s exited (%v); log tail:\n%s", p.Name, err, p.LogTail(3000))
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", url, errors.Join(ctx.Err(), last))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// kubectlGet gets the objects of a manifest file from the server: the
// keys (kind namespace/name) of those found, and kubectl's error output
// for those not found.
func (a *apiServer) kubectlGet(t *testing.T, manifest string) (map[string]object, string) {
	t.Helper()
	cmd := exec.Command(a.kubectl, "--kubeconfig", a.kubeconfig, "get", "-f", manifest, "-o", "json", "--ignore-not-found")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl get -f %s: %v\n%s", manifest, err, stderr.String())
	}
	found := map[string]object{}
	if len(strings.TrimSpace(string(out))) == 0 {
		return found, stderr.String()
	}
	var list struct {
		Items []object `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		var one object
		if err2 := json.Unmarshal(out, &one); err2 != nil {
			t.Fatalf("kubectl get -f %s: %v\n%s", manifest, err, out)
		}
		list.Items = []object{one}
	}
	for _, o := range list.Items {
		found[o.key()] = o
	}
	return found, stderr.String()
}

// TestHelmInstall installs the chart with Helm 3, then Helm 4, into a real
// API server: install, upgrade (a changed value reaches the DaemonSet),
// uninstall (every object gone, so the next Helm installs afresh).
func TestHelmInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the API server")
	}
	binDir := os.Getenv("PODCHRON_KUBE_BIN")
	if binDir == "" {
		t.Skip("PODCHRON_KUBE_BIN is not set: `make test` builds kube-apiserver and kubectl (test/e2e/tools/build.sh kubernetes) and sets it")
	}
	for _, b := range []string{"kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			t.Fatalf("PODCHRON_KUBE_BIN=%s: %v", binDir, err)
		}
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skipf("no etcd (Debian's etcd-server; scripts/install-deps.sh installs it): %v", err)
	}
	if !slices.ContainsFunc(helmMajors, func(h helmMajor) bool { return os.Getenv(h.env) != "" }) {
		t.Skip("neither PODCHRON_HELM nor PODCHRON_HELM4 is set: `make test` builds both (scripts/build-helm.sh)")
	}
	api := startAPIServer(t, binDir)
	for _, h := range helmMajors {
		t.Run(h.name, func(t *testing.T) { helmInstallCycle(t, api, h.bin(t)) })
	}
}

// helmInstallCycle: install, upgrade, uninstall with one Helm binary.
func helmInstallCycle(t *testing.T, api *apiServer, helm string) {
	run := func(args ...string) []byte {
		t.Helper()
		out, err := runHelmWith(t, helm, append(args, "--kubeconfig", api.kubeconfig)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Logf("%s", run("version"))
	t.Logf("%s", run("install", helmRelease, chartDir, "--namespace", helmNamespace, "--create-namespace"))
	checkRelease(t, run, 1)
	manifest := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(manifest, run("get", "manifest", helmRelease, "--namespace", helmNamespace), 0o644); err != nil {
		t.Fatal(err)
	}
	want := objects(t, helmTemplate(t))
	rendered := objects(t, mustRead(t, manifest))
	if !slices.Equal(sortedKeys(rendered), sortedKeys(want)) {
		t.Errorf("helm installed %v, helm template renders %v", sortedKeys(rendered), sortedKeys(want))
	}
	got, notFound := api.kubectlGet(t, manifest)
	if !slices.Equal(sortedKeys(got), sortedKeys(rendered)) {
		t.Fatalf("on the server: %v, want %v\n%s", sortedKeys(got), sortedKeys(rendered), notFound)
	}
	for k, o := range got {
		ann, _ := o.meta()["annotations"].(map[string]any)
		if ann["meta.helm.sh/release-name"] != helmRelease || ann["meta.helm.sh/release-namespace"] != helmNamespace {
			t.Errorf("%s: not owned by release %s/%s: annotations %v", k, helmNamespace, helmRelease, ann)
		}
	}

	run("upgrade", helmRelease, chartDir, "--namespace", helmNamespace, "--set", "logLevel=debug")
	checkRelease(t, run, 2)
	got, _ = api.kubectlGet(t, manifest)
	if args := daemonSetArgs(t, got); !slices.Contains(args, "--log-level=debug") {
		t.Errorf("after helm upgrade --set logLevel=debug the DaemonSet's args are %q", args)
	}

	run("uninstall", helmRelease, "--namespace", helmNamespace)
	deadline := time.Now().Add(time.Minute)
	for got, _ = api.kubectlGet(t, manifest); len(got) > 0; got, _ = api.kubectlGet(t, manifest) {
		if time.Now().After(deadline) {
			t.Fatalf("after helm uninstall, still on the server: %v", sortedKeys(got))
		}
		time.Sleep(time.Second)
	}
}

// checkRelease: helm status says the release is deployed at revision rev.
func checkRelease(t *testing.T, run func(...string) []byte, rev int) {
	t.Helper()
	var st struct {
		Version int `json:"version"`
		Info    struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	out := run("status", helmRelease, "--namespace", helmNamespace, "-o", "json")
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("helm status -o json: %v\n%s", err, out)
	}
	if st.Info.Status != "deployed" || st.Version != rev {
		t.Errorf("helm status: %s at revision %d, want deployed at %d", st.Info.Status, st.Version, rev)
	}
}

func daemonSetArgs(t *testing.T, objs map[string]object) []string {
	t.Helper()
	b, err := json.Marshal(byKind(t, objs, "DaemonSet"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := json.Unmarshal(b, &ds); err != nil {
		t.Fatalf("DaemonSet from the server: %v", err)
	}
	return tracer(t, &ds).Args
}

func sortedKeys(objs map[string]object) []string {
	var ks []string
	for k := range objs {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHelmKubeVersion: both Helms hold the chart's kubeVersion: they render
// for the oldest Kubernetes it admits (and, without --kube-version, for the
// one they were built with) and refuse the minor before it.
func TestHelmKubeVersion(t *testing.T) {
	for _, h := range helmMajors {
		t.Run(h.name, func(t *testing.T) {
			helm := h.bin(t)
			for _, kv := range []string{"", "1.35.0", "v1.35.2-eks-1234567"} {
				args := []string{"template", helmRelease, chartDir}
				if kv != "" {
					args = append(args, "--kube-version", kv)
				}
				if _, err := runHelmWith(t, helm, args...); err != nil {
					t.Errorf("kube version %q: %v", kv, err)
				}
			}
			out, err := runHelmWith(t, helm, "template", helmRelease, chartDir, "--kube-version", "1.34.9")
			if err == nil || !strings.Contains(err.Error(), "kubeVersion") {
				t.Errorf("kube version 1.34.9: want an error naming kubeVersion, got %v\n%s", err, out)
			}
		})
	}
}
