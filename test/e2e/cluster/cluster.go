// Package cluster runs a real single-node Kubernetes cluster on this machine
// for the e2e tests: etcd (Debian), kube-apiserver, kube-controller-manager,
// kube-scheduler and kubelet (v1.35.4, v1.36.3 or v1.37.2, built by test/e2e/tools/build.sh) on a
// real containerd (test/harness/containerd), everything bound to loopback or
// to a /32 address on a node-local bridge. Close stops every process it
// started, by PID, and puts the host back: mounts, the bridge, iptables
// chains, sysctls, directories and cgroups.
package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/podchron/podchron/test/e2e/proc"
	"github.com/podchron/podchron/test/harness/containerd"
)

// Config configures a Cluster.
type Config struct {
	// BinDir holds kube-apiserver, kube-controller-manager, kube-scheduler,
	// kubelet and kubectl.
	BinDir string
	// WorkDir receives certificates, configs, data and logs. Keep it short.
	WorkDir string
	// Runtime is the containerd the kubelet uses; its CgroupRoot should be
	// "/kubepods" (the kubelet's cgroupfs layout), or "/kubepods.slice"
	// with the systemd driver, which the kubelet then uses too.
	Runtime *containerd.Harness
	// NodeName (default "podchron-e2e") and NodeIP (default 10.250.250.1,
	// put on bridge NodeBridge, default "ptnode0").
	NodeName, NodeIP, NodeBridge string
	// APIPort is the API server's loopback port (default 16443); etcd uses
	// 12379/12380, the controller-manager 17257, the scheduler 17259.
	APIPort int
	// Gates are feature gates to switch on in every component besides
	// WantedGates (the stack's own choice: ContainerStopSignals, alpha
	// through 1.37, on the 1.37 leg); as with those, a gate a binary does
	// not know is left off and said so.
	Gates  []string
	Logger *slog.Logger
}

// Cluster is a running single-node cluster.
type Cluster struct {
	cfg Config
	log *slog.Logger
	pki pki

	// Server is the API server URL; Kubeconfig the admin kubeconfig.
	Server     string
	Kubeconfig string
	// CAFile is the cluster CA.
	CAFile string

	host hostSnapshot

	mu    sync.Mutex
	procs []*proc.Process

	// gates: the wanted feature gates every component's binary knows
	// (featureGates), switched on.
	gates []string
}

// WantedGates are the feature gates e2e 54 needs, switched on in every
// component (API server, controller-manager, scheduler, kubelet) when
// AlphaGatesEnv is set and all their binaries know them:
// RestartAllContainersOnContainerExits (alpha in 1.35) and
// NodeDeclaredFeatures (alpha in 1.35; the first needs it: the kubelet
// declares the feature, the scheduler matches pods that use it). A gate a
// binary does not list is left alone (an unknown gate stops a component)
// and the scenario skips, saying so.
//
// Off by default: with NodeDeclaredFeatures on, kubelet v1.35.4 panics
// (nil pointer in HandlePodUpdates, kubelet.go:2823, seen 2026-11-27 in the
// whole suite) when a static pod's mirror is deleted (e2e 23), and every
// scenario after it fails. e2e 54 passed with the gates on in a run of
// scenarios 30-54 the same day.
var WantedGates = []string{"RestartAllContainersOnContainerExits", "NodeDeclaredFeatures"}

// AlphaGatesEnv is the environment variable that, set to 1, switches
// WantedGates on.
const AlphaGatesEnv = "PODCHRON_E2E_ALPHA_GATES"

// GateOn reports whether the cluster runs with the feature gate on: one
// this cluster switched on, or one on by default in this version, as the
// API server's kubernetes_feature_enabled metric says (RestartAllContainers
// is beta, on by default, from 1.36).
func (c *Cluster) GateOn(ctx context.Context, name string) (bool, error) {
	if slices.Contains(c.gates, name) {
		return true, nil
	}
	out, err := c.Kubectl(ctx, "get", "--raw", "/metrics")
	if err != nil {
		return false, fmt.Errorf("the API server's metrics: %w", err)
	}
	prefix := `kubernetes_feature_enabled{name="` + name + `",`
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, prefix) {
			return strings.HasSuffix(strings.TrimSpace(line), " 1"), nil
		}
	}
	return false, nil // a gate this version does not have
}

// knownGates are the wanted gates (Config.Gates, and WantedGates when
// AlphaGatesEnv is set) every component's binary lists in its --help (as
// "Name=true|false").
func (c *Cluster) knownGates(ctx context.Context) ([]string, error) {
	wanted := slices.Clone(c.cfg.Gates)
	if os.Getenv(AlphaGatesEnv) == "1" {
		wanted = append(wanted, WantedGates...)
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	known := wanted
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"} {
		out, err := exec.CommandContext(ctx, filepath.Join(c.cfg.BinDir, name), "--help").CombinedOutput()
		if err != nil && len(out) == 0 {
			return nil, fmt.Errorf("%s --help: %w", name, err)
		}
		known = slices.DeleteFunc(known, func(g string) bool { return !strings.Contains(string(out), g+"=true|false") })
	}
	return known, nil
}

// gateFlag is the --feature-gates flag of the gates on ("" when none).
func (c *Cluster) gateFlag() []string {
	if len(c.gates) == 0 {
		return nil
	}
	on := make([]string, len(c.gates))
	for i, g := range c.gates {
		on[i] = g + "=true"
	}
	return []string{"--feature-gates=" + strings.Join(on, ",")}
}

// gateConfig is the KubeletConfiguration's featureGates stanza.
func (c *Cluster) gateConfig() string {
	if len(c.gates) == 0 {
		return ""
	}
	s := "featureGates:\n"
	for _, g := range c.gates {
		s += "  " + g + ": true\n"
	}
	return s
}

// Binaries the cluster needs in Config.BinDir.
var Binaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"}

// CheckRequirements says why the cluster cannot run here.
func CheckRequirements(binDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root")
	}
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%s: %w (build with test/e2e/tools/build.sh)", b, err)
		}
	}
	for _, b := range []string{"etcd", "openssl", "ip", "iptables-save"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s not on PATH (scripts/install-deps.sh installs it): %w", b, err)
		}
	}
	return nil
}

// Start brings the cluster up and waits for the node to be Ready. On error
// everything already started is stopped and the host restored.
func Start(ctx context.Context, cfg Config) (_ *Cluster, retErr error) {
	if err := CheckRequirements(cfg.BinDir); err != nil {
		return nil, err
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "podchron-e2e"
	}
	if cfg.NodeIP == "" {
		cfg.NodeIP = "10.250.250.1"
	}
	if cfg.NodeBridge == "" {
		cfg.NodeBridge = "ptnode0"
	}
	if cfg.APIPort == 0 {
		cfg.APIPort = 16443
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	snap, err := snapshotHost()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg: cfg, log: cfg.Logger.With("component", "e2e-cluster"),
		pki:    pki{dir: filepath.Join(cfg.WorkDir, "pki")},
		Server: fmt.Sprintf("https://127.0.0.1:%d", cfg.APIPort),
		host:   snap,
	}
	c.CAFile = c.pki.path("ca.crt")
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := c.Close(cctx); err != nil {
				c.log.Error("teardown after failed start", "err", err)
			}
		}
	}()
	t0 := time.Now()
	if err := c.makePKI(); err != nil {
		return nil, err
	}
	c.log.Info("certificates written", "took", time.Since(t0).Round(time.Millisecond))
	if err := addNodeBridge(cfg.NodeBridge, cfg.NodeIP); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	if err := c.startControlPlane(); err != nil {
		return nil, err
	}
	if err := c.startKubelet(); err != nil {
		return nil, err
	}
	if err := c.waitNodeReady(ctx); err != nil {
		return nil, err
	}
	// The controller-manager creates the default ServiceAccount of each
	// namespace; pods are refused until it exists.
	if err := c.waitFor(ctx, "default ServiceAccount", time.Minute, func() error {
		_, err := c.Kubectl(ctx, "get", "serviceaccount", "default", "-n", "default")
		return err
	}); err != nil {
		return nil, err
	}
	c.log.Info("cluster ready", "node", cfg.NodeName, "took", time.Since(t0).Round(time.Millisecond))
	return c, nil
}

// NodeName is the name of the cluster's only node.
func (c *Cluster) NodeName() string { return c.cfg.NodeName }

// APIPort is the API server's loopback port.
func (c *Cluster) APIPort() int { return c.cfg.APIPort }

// StaticPodDir is the kubelet's staticPodPath: a manifest written there runs
// as a static pod (with a mirror pod in the API server).
func (c *Cluster) StaticPodDir() string { return filepath.Join(c.cfg.WorkDir, "kubelet", "manifests") }

func (c *Cluster) makePKI() error {
	p := c.pki
	if err := p.ca(); err != nil {
		return err
	}
	type cert struct {
		name, cn, org string
		dns, ips      []string
	}
	for _, ct := range []cert{
		{"apiserver", "kube-apiserver", "", []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local", "localhost"}, []string{"127.0.0.1", "10.96.0.1", c.cfg.NodeIP}},
		{"admin", "e2e-admin", "system:masters", nil, nil},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters", nil, nil},
		{"kubelet", "system:node:" + c.cfg.NodeName, "system:nodes", nil, nil},
		{"kubelet-serving", "system:node:" + c.cfg.NodeName, "system:nodes", []string{c.cfg.NodeName}, []string{c.cfg.NodeIP}},
		{"controller-manager", "system:kube-controller-manager", "", nil, nil},
		{"scheduler", "system:kube-scheduler", "", nil, nil},
	} {
		if err := p.cert(ct.name, ct.cn, ct.org, ct.dns, ct.ips); err != nil {
			return err
		}
	}
	if err := p.serviceAccountKeys(); err != nil {
		return err
	}
	for _, n := range []string{"admin", "kubelet", "controller-manager", "scheduler"} {
		path, err := p.kubeconfig(n, c.Server)
		if err != nil {
			return err
		}
		if n == "admin" {
			c.Kubeconfig = path
		}
	}
	return nil
}

// start runs a component in its own process group, logging to a file.
func (c *Cluster) start(name string, bin string, args ...string) (*proc.Process, error) {
	logPath := filepath.Join(c.cfg.WorkDir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	p, err := proc.Start(c.log, name, logPath, bin, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// Logs returns the last n bytes of a component's log ("etcd",
// "kube-apiserver", "kubelet", ...).
func (c *Cluster) Logs(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(c.cfg.WorkDir, "logs", name+".log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitFor polls check until it succeeds, failing with the last error and
// the logs of any component that died.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if dead := c.dead(); dead != "" {
			return fmt.Errorf("waiting for %s: %s", what, dead)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s (%s): %w", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// dead describes components that exited.
func (c *Cluster) dead() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.procs {
		if done, err := p.Exited(); done {
			out = append(out, fmt.Sprintf("%s exited (%v); log tail:\n%s", p.Name, err, p.LogTail(3000)))
		}
	}
	return strings.Join(out, "\n")
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	data := filepath.Join(c.cfg.WorkDir, "etcd")
	if _, err := c.start("etcd", "etcd", "--name=e2e", "--data-dir="+data,
		"--listen-client-urls=http://127.0.0.1:12379", "--advertise-client-urls=http://127.0.0.1:12379",
		"--listen-peer-urls=http://127.0.0.1:12380", "--initial-advertise-peer-urls=http://127.0.0.1:12380",
		"--initial-cluster=e2e=http://127.0.0.1:12380", "--listen-metrics-urls=http://127.0.0.1:12381",
		"--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return err
	}
	return c.waitFor(ctx, "etcd", 30*time.Second, func() error {
		return HTTPOK(ctx, "http://127.0.0.1:12379/health", nil)
	})
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	p := c.pki
	gates, err := c.knownGates(ctx)
	if err != nil {
		return err
	}
	c.gates = gates
	c.log.Info("feature gates", "on", gates, "stack", c.cfg.Gates, "alpha_env", os.Getenv(AlphaGatesEnv) == "1", "alpha_env_gates", WantedGates)
	if _, err := c.start("kube-apiserver", filepath.Join(c.cfg.BinDir, "kube-apiserver"), append(c.gateFlag(),
		"--etcd-servers=http://127.0.0.1:12379",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.cfg.APIPort), "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true", "--service-cluster-ip-range=10.96.0.0/16",
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--kubelet-client-certificate="+p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p.path("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-key-file="+p.path("sa.pub"),
		"--service-account-signing-key-file="+p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--profiling=false", "--v=1")...); err != nil {
		return err
	}
	tlsCfg, err := c.clientTLS("admin")
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "kube-apiserver /readyz", 90*time.Second, func() error {
		return HTTPOK(ctx, c.Server+"/readyz", tlsCfg)
	})
}

func (c *Cluster) startControlPlane() error {
	p := c.pki
	if _, err := c.start("kube-controller-manager", filepath.Join(c.cfg.BinDir, "kube-controller-manager"), append(c.gateFlag(),
		"--kubeconfig="+p.path("controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+p.path("controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+p.path("controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port=17257", "--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p.path("sa.key"),
		"--root-ca-file="+p.path("ca.crt"),
		"--cluster-signing-cert-file="+p.path("ca.crt"), "--cluster-signing-key-file="+p.path("ca.key"),
		"--controllers=*,-nodeipam", "--profiling=false", "--v=1")...); err != nil {
		return err
	}
	_, err := c.start("kube-scheduler", filepath.Join(c.cfg.BinDir, "kube-scheduler"), append(c.gateFlag(),
		"--kubeconfig="+p.path("scheduler.kubeconfig"),
		"--authentication-kubeconfig="+p.path("scheduler.kubeconfig"),
		"--authorization-kubeconfig="+p.path("scheduler.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port=17259", "--leader-elect=false", "--profiling=false", "--v=1")...)
	return err
}

func (c *Cluster) startKubelet() error {
	p := c.pki
	dir := filepath.Join(c.cfg.WorkDir, "kubelet")
	for _, d := range []string{dir, filepath.Join(dir, "pod-logs"), filepath.Join(dir, "volume-plugins"), c.StaticPodDir()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("kubelet dirs: %w", err)
		}
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: %[10]s
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: %[2]s
tlsCertFile: %[3]s
tlsPrivateKeyFile: %[4]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[5]s}
authorization: {mode: Webhook}
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: %[6]s
volumePluginDir: %[7]s
resolvConf: /etc/resolv.conf
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
serializeImagePulls: false
staticPodPath: %[8]s
%[9]s`, c.cfg.NodeIP, c.cfg.Runtime.Endpoint, p.path("kubelet-serving.crt"), p.path("kubelet-serving.key"),
		p.path("ca.crt"), filepath.Join(dir, "pod-logs"), filepath.Join(dir, "volume-plugins"), c.StaticPodDir(), c.gateConfig(),
		c.cfg.Runtime.CgroupDriver)
	cfgPath := filepath.Join(c.cfg.WorkDir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	_, err := c.start("kubelet", filepath.Join(c.cfg.BinDir, "kubelet"),
		"--config="+cfgPath, "--kubeconfig="+p.path("kubelet.kubeconfig"),
		"--root-dir="+filepath.Join(dir, "root"), "--cert-dir="+filepath.Join(dir, "pki"),
		"--hostname-override="+c.cfg.NodeName, "--node-ip="+c.cfg.NodeIP, "--v=2")
	return err
}

func (c *Cluster) waitNodeReady(ctx context.Context) error {
	return c.waitFor(ctx, "node Ready", 2*time.Minute, func() error {
		out, err := c.Kubectl(ctx, "get", "node", c.cfg.NodeName,
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(out)) != "True" {
			return fmt.Errorf("node Ready=%q", out)
		}
		return nil
	})
}

// Kubectl runs the cluster's own kubectl as the admin.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.KubectlIn(ctx, nil, args...)
}

// KubectlIn runs kubectl with stdin.
func (c *Cluster) KubectlIn(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, filepath.Join(c.cfg.BinDir, "kubectl"),
		append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func (c *Cluster) clientTLS(name string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.pki.path(name+".crt"), c.pki.path(name+".key"))
	if err != nil {
		return nil, fmt.Errorf("client cert %s: %w", name, err)
	}
	// Only used against our own loopback API server, whose cert we made.
	return &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}, nil //nolint:gosec
}

// HTTPOK tells whether GET url answers 200 OK (a component's health or
// readiness endpoint).
func HTTPOK(ctx context.Context, url string, tlsCfg *tls.Config) error {
	cl := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// stopProc stops the named component (pods keep running in containerd).
func (c *Cluster) stopProc(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, p := range c.procs {
		if p.Name == name {
			errs = append(errs, p.Stop(15*time.Second))
		}
	}
	return errors.Join(errs...)
}

// Close stops the kubelet, removes every pod through CRI (the runtime
// harness is closed by its owner afterwards), stops the control plane and
// etcd by PID, and restores the host. It reports what was left behind.
func (c *Cluster) Close(ctx context.Context) error {
	var errs []error
	if err := c.stopProc("kubelet"); err != nil {
		errs = append(errs, err)
	}
	c.mu.Lock()
	procs := append([]*proc.Process(nil), c.procs...)
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountAll(c.cfg.WorkDir); err != nil {
		errs = append(errs, err)
	}
	if err := delBridge(c.cfg.NodeBridge); err != nil {
		errs = append(errs, err)
	}
	if err := c.host.restore(); err != nil {
		errs = append(errs, err)
	}
	if left := c.host.leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("host not restored: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// PauseAPIServer stops the API server (SIGSTOP) until resume (SIGCONT): the
// kubelet, the controllers and the tracer get no answer and no error for
// that time, as when a control plane stalls, while the node goes on.
// resume is safe to call more than once.
func (c *Cluster) PauseAPIServer() (resume func() error, err error) {
	return c.pause("kube-apiserver")
}

// PauseControllerManager stops kube-controller-manager (SIGSTOP) until
// resume (SIGCONT): its controllers (the endpoints controller among them)
// act on nothing meanwhile and catch up after, as a controller-manager
// behind on a busy control plane does. resume is safe to call more than
// once.
func (c *Cluster) PauseControllerManager() (resume func() error, err error) {
	return c.pause("kube-controller-manager")
}

func (c *Cluster) pause(name string) (resume func() error, err error) {
	c.mu.Lock()
	var pid int
	for _, p := range c.procs {
		if p.Name == name {
			pid = p.PID()
		}
	}
	c.mu.Unlock()
	if pid == 0 {
		return nil, fmt.Errorf("pause %s: no such process", name)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pause %s (pid %d): %w", name, pid, err)
	}
	var once sync.Once
	var cerr error
	resume = func() error {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				cerr = fmt.Errorf("resume %s (pid %d): %w", name, pid, err)
			}
		})
		return cerr
	}
	// kill(2) returns once the stop is pending, not done: a thread stops
	// when the scheduler next runs it, later on a loaded node. The pause
	// holds only when every thread is stopped.
	deadline := time.Now().Add(10 * time.Second)
	for {
		running, err := runningThreads(pid)
		if err == nil && len(running) == 0 {
			return resume, nil
		}
		if time.Now().After(deadline) {
			_ = resume()
			if err == nil {
				err = fmt.Errorf("threads %v not stopped", running)
			}
			return nil, fmt.Errorf("pause %s (pid %d) within 10 s: %w", name, pid, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runningThreads lists pid's threads that are not stopped (state T in
// /proc/<pid>/task/<tid>/stat) or exiting (Z, X), each as tid:state.
func runningThreads(pid int) ([]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tids, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("threads of %d: %w", pid, err)
	}
	var running []string
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(dir, tid.Name(), "stat"))
		if err != nil {
			continue // the thread is gone
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return nil, fmt.Errorf("thread %s of %d: stat %q", tid.Name(), pid, b)
		}
		if st := b[i+2]; st != 'T' && st != 'Z' && st != 'X' { // stopped, or exiting
			running = append(running, tid.Name()+":"+string(st))
		}
	}
	return running, nil
}

// RestartKubelet stops the kubelet (SIGTERM: pods keep running in
// containerd), starts a new one and waits until the node is Ready again.
// The old kubelet's log is kept as kubelet.log.1.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	if err := c.stopProc("kubelet"); err != nil {
		return fmt.Errorf("stop kubelet: %w", err)
	}
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(p *proc.Process) bool { return p.Name == "kubelet" })
	c.mu.Unlock()
	logPath := filepath.Join(c.cfg.WorkDir, "logs", "kubelet.log")
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		return fmt.Errorf("keep the kubelet's log: %w", err)
	}
	if err := c.startKubelet(); err != nil {
		return fmt.Errorf("start kubelet: %w", err)
	}
	// The node stays Ready through a short restart: the new kubelet's
	// health endpoint says it is up.
	if err := c.waitFor(ctx, "kubelet healthz", time.Minute, func() error {
		return HTTPOK(ctx, "http://127.0.0.1:10248/healthz", nil)
	}); err != nil {
		return err
	}
	return c.waitNodeReady(ctx)
}
