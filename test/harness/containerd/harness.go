// Package containerd is a test harness that runs a private, real containerd
// (CRI plugin, runc, real CNI bridge + host-local plugins) and drives it
// like a kubelet through CRI v1. Everything it creates lives under a
// temporary runtime directory, its own sockets, its own CNI network (bridge
// and /24) and its own cgroup root, so several harnesses (and a real
// kubelet) can coexist on one host; Close restores the host.
//
// Images are built in Go as OCI archives (static busybox base, optional
// extra files) and imported with ctr: no Docker and no registry.
//
// Tests use Start (skips when not root or when containerd, runc, ctr, the
// CNI plugins or a static busybox are missing; fails when they are present
// but do not work). Non-test code (e2e drivers) can use New and Close.
//
//	h := containerd.Start(t, containerd.Config{})           // Close via t.Cleanup
//	pod, err := h.RunPodSandbox(ctx, containerd.PodSpec{Name: "web", Namespace: "e2e"})
//	id, err := h.RunContainer(ctx, pod, containerd.ContainerSpec{
//		Name: "app", Command: []string{"sleep", "1000"}, MemoryLimitBytes: 32 << 20})
//	ct, err := h.CRI().ContainerStatus(ctx, id, pod.ID)     // internal/cri types
//	err = h.StopContainer(ctx, id, 2*time.Second)
//	err = h.TeardownPod(ctx, pod.ID, 0)
//
// The OCI runtime the runc v2 shim runs is Config.Runtime, else
// $PODCHRON_OCI_RUNTIME: "runc" (Debian's, the default), "runc-upstream"
// ($PODCHRON_RUNC_UPSTREAM or scripts/build-runc.sh), "crun", or an
// absolute path (see ResolveRuntime). The harness logs the runtime's,
// containerd's and the kernel's versions (Harness.Versions).
//
// Extra images (e.g. podchron's own static binary) are built with
// Config.Images or ImportImage:
//
//	h.ImportImage(ctx, containerd.Image{Name: "localhost/podchron/podchron:e2e",
//		Entrypoint: []string{"/podchron"},
//		Files: []containerd.File{{Path: "/podchron", HostPath: binPath}}})
//
// Host side effects and how they are undone: containerd, its shims and
// container processes (stopped through CRI, then killed by PID), mounts
// under the runtime dir (netns, rootfs), pod cgroups under CgroupRoot in
// every hierarchy, the CNI bridge, libcni cache files and shim sockets. The
// state is persisted in <runtime dir>/harness.json so that New (and
// CleanupStale) clean up after a harness whose process was killed.
package containerd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cri"
)

// Config configures a Harness. The zero value is usable.
type Config struct {
	// CgroupRoot is the cgroupfs root under which pod cgroups are created
	// (kubelet layout <CgroupRoot>/<qos>/pod<uid>). Default
	// "/podchron-e2e-<rand>", so tests never collide with a real kubelet's
	// /kubepods. Use "/kubepods" to look exactly like a kubelet.
	CgroupRoot string
	// BridgeName of the CNI bridge (max 15 chars). Default "ptbr<rand>".
	BridgeName string
	// Subnet of the CNI network (a /24). Default: a free 10.x.y.0/24.
	Subnet string
	// BaseDir is where the runtime directory is created. Default os.TempDir().
	// Keep it short: unix socket paths are limited to 108 bytes.
	BaseDir string
	// Images are built and imported in addition to the pause and busybox
	// images.
	Images []Image
	// Logger (default slog.Default(); Start uses the test log).
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for CRI RuntimeReady+NetworkReady
	// (default 30s).
	ReadyTimeout time.Duration
	// LogLevel of containerd (default "info").
	LogLevel string
	// Runtime is the OCI runtime the runc v2 shim runs (BinaryName).
	// Zero: $PODCHRON_OCI_RUNTIME, else Debian's runc (see ResolveRuntime).
	// A Runtime with only Name set is resolved by name.
	Runtime Runtime
	// CgroupDriver is the kubelet's --cgroup-driver the harness plays:
	// CgroupDriverCgroupfs (zero) or CgroupDriverSystemd, which needs
	// systemd as PID 1 and a CgroupRoot that is a top-level slice (default
	// "/podchrone2e<rand>.slice").
	CgroupDriver string
	// Containerd is the containerd binary to run. Zero: $PODCHRON_CONTAINERD,
	// else ContainerdBinary (Debian's 1.6, on PATH). A containerd 2 gets a
	// version-3 config, and its own directory first on its PATH so that it
	// starts the containerd-shim-runc-v2 beside it, not Debian's.
	Containerd string
}

// Binaries and plugins the harness needs.
var (
	ContainerdBinary = "containerd"
	CtrBinary        = "ctr"
	CNIBinDir        = "/usr/lib/cni"
	CNIPlugins       = []string{"bridge", "host-local", "loopback"}
)

// ErrRequirements is wrapped by CheckRequirements errors: the environment
// cannot run the harness (tests should skip, not fail).
var ErrRequirements = errors.New("containerd harness requirements not met")

// Harness is a running private containerd.
type Harness struct {
	cfg Config
	log *slog.Logger

	// RuntimeDir holds everything: config, root, state, sockets, CNI conf
	// and IPAM data, images, logs.
	RuntimeDir string
	// Socket is the containerd gRPC socket path; Endpoint the CRI endpoint.
	Socket   string
	Endpoint string
	// NetworkName, BridgeName and Subnet describe the CNI network.
	NetworkName string
	BridgeName  string
	Subnet      *net.IPNet
	// CgroupRoot is the root of the pod cgroups (see Config.CgroupRoot).
	CgroupRoot string
	// CgroupDriver is Config.CgroupDriver, resolved.
	CgroupDriver string
	// PureV2 is true on a pure cgroup v2 host (/sys/fs/cgroup is cgroup2,
	// the kubelet's test for the unified mode): containers then get
	// memory.oom.group=1 as from a kubelet (ContainerSpec.Unified).
	PureV2 bool
	// PauseImage and BusyboxImage are the imported default image names.
	PauseImage   string
	BusyboxImage string
	// Runtime is the OCI runtime containers run with; Versions what the
	// runtime, containerd and the kernel say they are.
	Runtime  Runtime
	Versions Versions

	timings *Timings

	mu      sync.Mutex
	client  *cri.Client
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current containerd has exited
	exitErr error
	// containerdMajor is the running containerd's major version (1 or 2).
	containerdMajor int
	logFile         *os.File
	closed          bool
	ipFwd           string // /proc/sys/net/ipv4/ip_forward before start
	hostInfo        hostState
}

// PureCgroupV2 reports whether /sys/fs/cgroup is a cgroup2 mount (the
// unified mode; the kubelet's and runc's own test), not a v1 or hybrid
// layout.
func PureCgroupV2() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// CheckRequirements reports why the harness cannot run here, wrapping
// ErrRequirements; nil when it can.
func CheckRequirements() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "must run as root")
	}
	for _, b := range []string{ContainerdBinary, CtrBinary, "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, fmt.Sprintf("%s not found", b))
		}
	}
	for _, p := range CNIPlugins {
		if _, err := os.Stat(filepath.Join(CNIBinDir, p)); err != nil {
			missing = append(missing, fmt.Sprintf("CNI plugin %s not found in %s", p, CNIBinDir))
		}
	}
	if err := checkStaticBusybox(BusyboxPath); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		missing = append(missing, "no /sys/fs/cgroup")
	}
	if err := checkDefaultRuntime(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrRequirements, strings.Join(missing, "; "))
	}
	return nil
}

// Start runs a harness for a test: it skips the test when CheckRequirements
// fails or the runtime is not installed (or buildable), fails it when
// containerd cannot be started, and registers Close (which also fails the
// test if the host is not restored) with t.Cleanup.
func Start(t testing.TB, cfg Config) *Harness {
	t.Helper()
	if err := CheckRequirements(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = TestLogger(t, slog.LevelInfo)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt, err := cfg.resolveRuntime(ctx)
	if errors.Is(err, ErrRequirements) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("containerd harness: %v", err)
	}
	cfg.Runtime = rt
	h, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("containerd harness: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if testing.Verbose() {
			t.Logf("containerd harness timings:\n%s", h.Timings().Summary())
		}
		if err := h.Close(ctx); err != nil {
			t.Errorf("containerd harness cleanup: %v", err)
		}
	})
	return h
}

// New starts a private containerd, imports the pause and busybox images
// (and cfg.Images) and waits until CRI reports RuntimeReady and
// NetworkReady. On error everything already created is cleaned up.
func New(ctx context.Context, cfg Config) (_ *Harness, retErr error) {
	if err := CheckRequirements(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "info"
	}
	if cfg.BaseDir == "" {
		cfg.BaseDir = os.TempDir()
	}
	log := cfg.Logger.With("component", "containerd-harness")
	rt, err := cfg.resolveRuntime(ctx)
	if err != nil {
		return nil, err
	}
	cfg.Runtime = rt
	cfg.Containerd = cfg.containerdBinary()
	versions, err := collectVersions(ctx, rt, cfg.Containerd)
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	major, err := containerdMajor(versions.Containerd)
	if err != nil {
		return nil, fmt.Errorf("containerd version: %w", err)
	}
	log.Info("containerd harness versions", "oci_runtime", rt.Name, "binary", rt.Binary,
		"runtime_version", versions.Runtime, "runtime_build", rt.VersionInfo(ctx),
		"containerd", versions.Containerd, "containerd_binary", cfg.Containerd, "kernel", versions.Kernel)

	if n, err := CleanupStale(log); err != nil {
		log.Warn("cleaning up stale harnesses", "err", err)
	} else if n > 0 {
		log.Info("cleaned up stale harnesses", "count", n)
	}

	suffix := randHex(4)
	var slice string // the systemd driver's root slice
	switch cfg.CgroupDriver {
	case "", CgroupDriverCgroupfs:
		cfg.CgroupDriver = CgroupDriverCgroupfs
		if cfg.CgroupRoot == "" {
			cfg.CgroupRoot = "/podchron-e2e-" + suffix
		}
	case CgroupDriverSystemd:
		if !SystemdRunning() {
			return nil, fmt.Errorf("%w: the systemd cgroup driver needs systemd as PID 1 (no /run/systemd/system)", ErrRequirements)
		}
		if cfg.CgroupRoot == "" {
			cfg.CgroupRoot = "/podchrone2e" + suffix + ".slice"
		}
		if err := checkRootSlice(cfg.CgroupRoot); err != nil {
			return nil, err
		}
		slice = strings.TrimPrefix(cfg.CgroupRoot, "/")
	default:
		return nil, fmt.Errorf("cgroup driver %q: want %s or %s", cfg.CgroupDriver, CgroupDriverCgroupfs, CgroupDriverSystemd)
	}
	cfg.CgroupRoot = filepath.Clean("/" + cfg.CgroupRoot)
	if cfg.BridgeName == "" {
		cfg.BridgeName = "ptbr" + suffix
	}
	if len(cfg.BridgeName) > 15 {
		return nil, fmt.Errorf("bridge name %q longer than 15 characters", cfg.BridgeName)
	}
	var subnet *net.IPNet
	if cfg.Subnet == "" {
		s, err := pickSubnet()
		if err != nil {
			return nil, err
		}
		subnet = s
	} else {
		_, s, err := net.ParseCIDR(cfg.Subnet)
		if err != nil {
			return nil, fmt.Errorf("subnet %q: %w", cfg.Subnet, err)
		}
		subnet = s
	}

	rtDir, err := os.MkdirTemp(cfg.BaseDir, "ptctrd-")
	if err != nil {
		return nil, fmt.Errorf("runtime dir: %w", err)
	}
	h := &Harness{
		cfg:             cfg,
		log:             log.With("runtime_dir", rtDir),
		RuntimeDir:      rtDir,
		Socket:          filepath.Join(rtDir, "containerd.sock"),
		NetworkName:     "podchron-e2e-" + suffix,
		BridgeName:      cfg.BridgeName,
		Subnet:          subnet,
		CgroupRoot:      cfg.CgroupRoot,
		CgroupDriver:    cfg.CgroupDriver,
		PureV2:          PureCgroupV2(),
		PauseImage:      PauseImageName,
		BusyboxImage:    BusyboxImageName,
		Runtime:         rt,
		Versions:        versions,
		containerdMajor: major,
		timings:         NewTimings(),
	}
	h.Endpoint = "unix://" + h.Socket
	if len(h.Socket) > 100 {
		_ = os.RemoveAll(rtDir)
		return nil, fmt.Errorf("socket path %s too long for a unix socket; use a shorter BaseDir", h.Socket)
	}
	h.hostInfo = hostState{
		OwnerPID: os.Getpid(), OwnerStart: procStartTime(os.Getpid()),
		RuntimeDir: rtDir, Socket: h.Socket, CgroupRoot: h.CgroupRoot,
		OwnsCgroupRoot: h.CgroupRoot != "/" && len(cgroupDirs(h.CgroupRoot)) == 0,
		Slice:          slice,
		Bridge:         h.BridgeName, Network: h.NetworkName, Subnet: subnet.String(),
		CreatedDirs: harnessCreatedDirs(),
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err == nil {
		h.ipFwd = strings.TrimSpace(string(b))
	}
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if cerr := h.Close(cctx); cerr != nil {
				h.log.Error("cleanup after failed start", "err", cerr)
			}
		}
	}()
	if err := h.writeState(); err != nil {
		return nil, err
	}
	if err := h.writeConfig(); err != nil {
		return nil, err
	}

	// Build images while nothing runs yet.
	images := append([]Image{PauseImage(), BusyboxImage()}, cfg.Images...)
	archives := make([]*ImageArchive, 0, len(images))
	for _, img := range images {
		a, err := h.BuildImage(img)
		if err != nil {
			return nil, err
		}
		archives = append(archives, a)
	}

	if err := h.StartDaemon(ctx); err != nil {
		return nil, err
	}
	for _, a := range archives {
		if err := h.importArchive(ctx, a); err != nil {
			return nil, err
		}
	}
	h.log.Info("containerd harness ready", "endpoint", h.Endpoint, "bridge", h.BridgeName,
		"subnet", h.Subnet.String(), "cgroup_root", h.CgroupRoot, "oci_runtime", h.Runtime.Name)
	return h, nil
}

// CRI returns the CRI client connected to the running containerd (nil
// while it is stopped).
func (h *Harness) CRI() *cri.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.client
}

// Timings returns the timings recorded so far (containerd.ready,
// image.build, image.import and every driver call).
func (h *Harness) Timings() *Timings { return h.timings }

// ContainerdPID returns the PID of the running containerd (0 when stopped).
func (h *Harness) ContainerdPID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil || h.cmd.Process == nil {
		return 0
	}
	return h.cmd.Process.Pid
}

// ContainerdLog returns the last n bytes of containerd's log.
func (h *Harness) ContainerdLog(n int) string {
	b, err := os.ReadFile(filepath.Join(h.RuntimeDir, "containerd.log"))
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func (h *Harness) writeConfig() error {
	rt := h.RuntimeDir
	for _, d := range []string{"root", "state", "opt", "runc", "net.d", "cni-ipam", "images", "pods"} {
		if err := os.MkdirAll(filepath.Join(rt, d), 0o700); err != nil {
			return fmt.Errorf("runtime dir: %w", err)
		}
	}
	config := h.containerdConfig(h.containerdMajor)
	if err := os.WriteFile(filepath.Join(rt, "config.toml"), []byte(config), 0o600); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}

	conflist := map[string]any{
		"cniVersion": "1.0.0",
		"name":       h.NetworkName,
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      h.BridgeName,
			"isGateway":   false,
			"ipMasq":      false,
			"hairpinMode": false,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": h.Subnet.String()}}},
				"dataDir": filepath.Join(rt, "cni-ipam"),
			},
		}},
	}
	b, err := json.MarshalIndent(conflist, "", "  ")
	if err != nil {
		return fmt.Errorf("CNI conflist: %w", err)
	}
	if err := os.WriteFile(filepath.Join(rt, "net.d", "10-podchron-e2e.conflist"), b, 0o600); err != nil {
		return fmt.Errorf("CNI conflist: %w", err)
	}
	return nil
}

// StartDaemon starts containerd (again) and waits for CRI readiness. It is
// called by New; call it yourself after StopDaemon.
func (h *Harness) StartDaemon(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("harness closed")
	}
	if h.cmd != nil {
		h.mu.Unlock()
		return errors.New("containerd already running")
	}
	h.mu.Unlock()

	logf, err := os.OpenFile(filepath.Join(h.RuntimeDir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("containerd log: %w", err)
	}
	start := time.Now()
	cmd := exec.Command(h.cfg.Containerd, "--config", filepath.Join(h.RuntimeDir, "config.toml"))
	if h.containerdMajor >= 2 {
		// The shim is looked up on PATH first: the one beside this containerd.
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(h.cfg.Containerd)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Dir = h.RuntimeDir
	// Own process group: a ^C to the test does not kill containerd before
	// cleanup ran; CleanupStale handles crashed owners.
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start containerd: %w", err)
	}
	exited := make(chan struct{})
	h.mu.Lock()
	h.cmd, h.exited, h.logFile, h.exitErr = cmd, exited, logf, nil
	h.hostInfo.ContainerdPID = cmd.Process.Pid
	h.mu.Unlock()
	go func() { // owned: ends when containerd exits; StopDaemon waits for it
		err := cmd.Wait()
		h.mu.Lock()
		h.exitErr = err
		h.mu.Unlock()
		close(exited)
	}()
	if err := h.writeState(); err != nil {
		return err
	}
	h.log.Debug("containerd started", "pid", cmd.Process.Pid)

	client, err := h.waitReady(ctx, exited)
	if err != nil {
		return fmt.Errorf("containerd (pid %d) not ready: %w\n--- containerd log (tail) ---\n%s", cmd.Process.Pid, err, h.ContainerdLog(4000))
	}
	h.mu.Lock()
	h.client = client
	h.mu.Unlock()
	d := time.Since(start)
	h.timings.Record("containerd.ready", d)
	h.log.Info("containerd ready", "pid", cmd.Process.Pid, "took", d,
		"version", client.RuntimeVersion().Version)
	return nil
}

func (h *Harness) waitReady(ctx context.Context, exited <-chan struct{}) (*cri.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-exited:
			h.mu.Lock()
			err := h.exitErr
			h.mu.Unlock()
			return nil, fmt.Errorf("containerd exited: %w", err)
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %w)", ctx.Err(), lastErr)
		case <-tick.C:
		}
		if _, err := os.Stat(h.Socket); err != nil {
			lastErr = err
			continue
		}
		c, err := cri.Dial(ctx, h.Endpoint, cri.WithLogger(h.log), cri.WithConnectTimeout(2*time.Second))
		if err != nil {
			lastErr = err
			continue
		}
		st, err := c.Status(ctx)
		if err == nil && st.Ready() {
			return c, nil
		}
		if err == nil {
			err = fmt.Errorf("not ready: %+v", st.Conditions)
		}
		lastErr = err
		_ = c.Close()
	}
}

// StopDaemon stops containerd (SIGTERM, SIGKILL after 10s) without
// touching containers: their shims keep running, as on a real node when
// containerd restarts.
func (h *Harness) StopDaemon(ctx context.Context) error {
	h.mu.Lock()
	cmd, exited, client, logf := h.cmd, h.exited, h.client, h.logFile
	h.client = nil
	h.mu.Unlock()
	if client != nil {
		_ = client.Close()
	}
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(unix.SIGTERM)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		h.log.Warn("containerd did not stop on SIGTERM; killing", "pid", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-exited
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-exited
	}
	h.mu.Lock()
	h.cmd, h.exited, h.logFile = nil, nil, nil
	h.hostInfo.ContainerdPID = 0
	h.mu.Unlock()
	if logf != nil {
		_ = logf.Close()
	}
	h.log.Debug("containerd stopped", "pid", cmd.Process.Pid)
	return h.writeState()
}

// Restart stops and starts containerd.
func (h *Harness) Restart(ctx context.Context) error {
	if err := h.StopDaemon(ctx); err != nil {
		return err
	}
	return h.StartDaemon(ctx)
}

// BuildImage writes img as an OCI archive under the runtime directory.
func (h *Harness) BuildImage(img Image) (*ImageArchive, error) {
	start := time.Now()
	dst := filepath.Join(h.RuntimeDir, "images", safeName(img.Name)+".tar")
	a, err := BuildImageArchive(img, dst)
	if err != nil {
		return nil, err
	}
	h.timings.Record("image.build", time.Since(start))
	h.log.Debug("image built", "image", img.Name, "layer_bytes", a.LayerSize, "took", time.Since(start))
	return a, nil
}

// ImportImage builds img and imports it into the running containerd.
func (h *Harness) ImportImage(ctx context.Context, img Image) (*ImageArchive, error) {
	a, err := h.BuildImage(img)
	if err != nil {
		return nil, err
	}
	return a, h.importArchive(ctx, a)
}

func (h *Harness) importArchive(ctx context.Context, a *ImageArchive) error {
	start := time.Now()
	if err := ImportImageArchive(ctx, h.Socket, a.Path); err != nil {
		return err
	}
	d := time.Since(start)
	h.timings.Record("image.import", d)
	h.log.Debug("image imported", "image", a.Name, "took", d)
	return nil
}

// Close removes every pod through CRI, stops containerd and restores the
// host (processes, mounts, cgroups, bridge, CNI cache, runtime dir). It
// returns an error listing anything it could not restore.
func (h *Harness) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	client := h.client
	h.mu.Unlock()

	var errs []error
	if client != nil {
		if err := h.removeAllPods(ctx, client); err != nil {
			errs = append(errs, err)
		}
	}
	if err := h.StopDaemon(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := cleanupHost(h.hostInfo, h.log); err != nil {
		errs = append(errs, err)
	}
	if left := h.Leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("host not restored: %s", strings.Join(left, "; ")))
	}
	if len(errs) == 0 {
		h.log.Debug("containerd harness closed; host restored")
	}
	return errors.Join(errs...)
}

// Leftovers lists what of this harness is still present on the host
// (empty after a successful Close).
func (h *Harness) Leftovers() []string {
	h.mu.Lock()
	st := h.hostInfo
	h.mu.Unlock()
	left := leftovers(st)
	if h.ipFwd != "" {
		if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err == nil && strings.TrimSpace(string(b)) != h.ipFwd {
			left = append(left, fmt.Sprintf("net.ipv4.ip_forward changed from %s to %s", h.ipFwd, strings.TrimSpace(string(b))))
		}
	}
	return left
}

func (h *Harness) writeState() error {
	h.mu.Lock()
	st := h.hostInfo
	h.mu.Unlock()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("harness state: %w", err)
	}
	if err := os.WriteFile(filepath.Join(h.RuntimeDir, stateFileName), b, 0o600); err != nil {
		return fmt.Errorf("harness state: %w", err)
	}
	return nil
}

// TestLogger returns a slog.Logger writing to t.Log.
func TestLogger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

var _ io.Writer = tWriter{}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}
