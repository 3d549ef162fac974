package scale

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/podtrace/podtrace/test/e2e/proc"
)

// Ports on loopback, apart from the e2e cluster's (12379.., 16443).
const (
	etcdClient  = "http://127.0.0.1:22379"
	etcdPeer    = "http://127.0.0.1:22380"
	etcdMetrics = "http://127.0.0.1:22381"
	apiPort     = 26443
	kwokPort    = 26444
)

// controlPlane is etcd (Debian's etcd-server) and kube-apiserver v1.34.4
// (test/e2e/tools/build.sh), with kwok simulating the nodes and their pods'
// status. No controller-manager, scheduler or kubelet: the driver binds
// pods itself (spec.nodeName) and writes the kubelet's events.
type controlPlane struct {
	dir        string
	log        *slog.Logger
	procs      []*proc.Process
	server     string
	kubeconfig string
	tls        *tls.Config // admin client TLS, for /metrics
}

func startControlPlane(ctx context.Context, log *slog.Logger, binDir, kwokBin, dir string) (_ *controlPlane, retErr error) {
	cp := &controlPlane{dir: dir, log: log, server: fmt.Sprintf("https://127.0.0.1:%d", apiPort)}
	defer func() {
		if retErr != nil {
			cp.close()
		}
	}()
	if err := cp.pki(); err != nil {
		return nil, err
	}
	if _, err := cp.start("etcd", "etcd", "--name=scale", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdClient, "--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer, "--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=scale="+etcdPeer, "--listen-metrics-urls="+etcdMetrics,
		"--quota-backend-bytes=8589934592", "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	if err := cp.waitFor(ctx, "etcd", 30*time.Second, func() error { return httpOK(ctx, etcdClient+"/health", nil) }); err != nil {
		return nil, err
	}
	p := func(n string) string { return filepath.Join(dir, "pki", n) }
	if _, err := cp.start("kube-apiserver", filepath.Join(binDir, "kube-apiserver"),
		"--etcd-servers="+etcdClient,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort), "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none", "--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--tls-cert-file="+p("apiserver.crt"), "--tls-private-key-file="+p("apiserver.key"),
		"--client-ca-file="+p("ca.crt"),
		"--service-account-key-file="+p("sa.pub"), "--service-account-signing-key-file="+p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
		"--profiling=false", "--v=1"); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(p("admin.crt"), p("admin.key"))
	if err != nil {
		return nil, err
	}
	// Our own loopback API server, whose certificate we made.
	cp.tls = &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} //nolint:gosec
	if err := cp.waitFor(ctx, "kube-apiserver /readyz", 2*time.Minute, func() error {
		return httpOK(ctx, cp.server+"/readyz", cp.tls)
	}); err != nil {
		return nil, err
	}
	// kwok: manages the nodes annotated kwok.x-k8s.io/node=fake and their
	// pods, with its default stages (node ready and heartbeats, pod ready,
	// pod deletion).
	if _, err := cp.start("kwok", kwokBin,
		"--kubeconfig="+cp.kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.0.0.1/8", "--node-ip=10.0.0.1",
		fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
		"--node-lease-duration-seconds=40",
	); err != nil {
		return nil, err
	}
	if err := cp.waitFor(ctx, "kwok /healthz", time.Minute, func() error {
		return httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", kwokPort), nil)
	}); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) start(name, bin string, args ...string) (*proc.Process, error) {
	logPath := filepath.Join(cp.dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	pr, err := proc.Start(cp.log, name, logPath, bin, args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, pr)
	return pr, nil
}

// close stops every process it started, by PID, last first.
func (cp *controlPlane) close() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if err := cp.procs[i].Stop(15 * time.Second); err != nil {
			cp.log.Error("stop", "err", err)
		}
	}
	cp.procs = nil
}

func (cp *controlPlane) dead() error {
	var errs []error
	for _, pr := range cp.procs {
		if done, err := pr.Exited(); done {
			errs = append(errs, fmt.Errorf("%s exited (%v); log tail:\n%s", pr.Name, err, pr.LogTail(3000)))
		}
	}
	return errors.Join(errs...)
}

func (cp *controlPlane) waitFor(ctx context.Context, what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		last := check()
		if last == nil {
			return nil
		}
		if err := cp.dead(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s (%s): %w", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// metrics returns the API server's Prometheus text.
func (cp *controlPlane) metrics(ctx context.Context) (string, error) {
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cp.tls}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.server+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), nil
}

// pki makes a CA, the API server's serving cert, an admin client cert
// (system:masters) and the service-account key pair with openssl, the way
// test/e2e/cluster does, and writes the admin kubeconfig.
func (cp *controlPlane) pki() error {
	dir := filepath.Join(cp.dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := func(n string) string { return filepath.Join(dir, n) }
	ssl := func(args ...string) error {
		cmd := exec.Command("openssl", args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("openssl %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
		}
		return nil
	}
	if err := ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
		"-subj", "/CN=podtrace-scale-ca", "-keyout", path("ca.key"), "-out", path("ca.crt"),
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"); err != nil {
		return err
	}
	cert := func(name, subj, ext string) error {
		csr := path(name + ".csr")
		if err := ssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
			"-subj", subj, "-keyout", path(name+".key"), "-out", csr); err != nil {
			return err
		}
		extFile := path(name + ".ext")
		if err := os.WriteFile(extFile, []byte("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"+ext), 0o600); err != nil {
			return err
		}
		return ssl("x509", "-req", "-in", csr, "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
			"-CAcreateserial", "-days", "2", "-extfile", extFile, "-out", path(name+".crt"))
	}
	if err := cert("apiserver", "/CN=kube-apiserver",
		"extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,IP:127.0.0.1,IP:10.96.0.1\n"); err != nil {
		return err
	}
	if err := cert("admin", "/O=system:masters/CN=scale-admin", "extendedKeyUsage=clientAuth\n"); err != nil {
		return err
	}
	if err := ssl("genrsa", "-out", path("sa.key"), "2048"); err != nil {
		return err
	}
	if err := ssl("rsa", "-in", path("sa.key"), "-pubout", "-out", path("sa.pub")); err != nil {
		return err
	}
	b64 := func(n string) (string, error) {
		b, err := os.ReadFile(path(n))
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := b64("ca.crt")
	if err != nil {
		return err
	}
	crt, err := b64("admin.crt")
	if err != nil {
		return err
	}
	key, err := b64("admin.key")
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: scale
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: admin
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: scale
  context: {cluster: scale, user: admin}
current-context: scale
`, cp.server, ca, crt, key)
	cp.kubeconfig = path("admin.kubeconfig")
	return os.WriteFile(cp.kubeconfig, []byte(cfg), 0o600)
}

func httpOK(ctx context.Context, url string, tlsCfg *tls.Config) error {
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
