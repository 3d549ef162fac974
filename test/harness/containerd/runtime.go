package containerd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Runtime is the OCI runtime that containerd's io.containerd.runc.v2 shim
// runs for every container (BinaryName in the runtime's options): runc or
// anything with runc's command line, such as crun.
type Runtime struct {
	// Name is how logs and test names call it: "runc", "runc-upstream",
	// "crun", or the binary's path.
	Name string
	// Binary is the runtime's absolute path.
	Binary string
}

// Environment variables that choose the runtime.
const (
	// RuntimeEnv selects the OCI runtime of harnesses whose Config.Runtime
	// is zero: a name known to ResolveRuntime or an absolute path.
	// Default "runc".
	RuntimeEnv = "PODCHRON_OCI_RUNTIME"
	// RuncUpstreamEnv is the path of an upstream runc build for
	// "runc-upstream" (`make test` sets it from scripts/build-runc.sh).
	// Unset, the harness runs scripts/build-runc.sh itself (cached).
	RuncUpstreamEnv = "PODCHRON_RUNC_UPSTREAM"
)

// Binaries of the named runtimes.
var (
	// RuncBinary is Debian's runc ("runc").
	RuncBinary = "/usr/sbin/runc"
	// CrunBinary is Debian's crun ("crun").
	CrunBinary = "/usr/bin/crun"
)

// RuntimeNames are the runtimes ResolveRuntime knows by name, in the
// order test matrices run them.
var RuntimeNames = []string{"runc", "runc-upstream", "crun"}

// DefaultRuntime resolves $PODCHRON_OCI_RUNTIME ("runc" when unset).
func DefaultRuntime(ctx context.Context) (Runtime, error) {
	return ResolveRuntime(ctx, os.Getenv(RuntimeEnv))
}

// ResolveRuntime turns a runtime name or an absolute path into a Runtime:
//
//	"" or "runc"     Debian's runc (RuncBinary)
//	"runc-upstream"  $PODCHRON_RUNC_UPSTREAM, else scripts/build-runc.sh (newest upstream release, cached)
//	"crun"           crun (CrunBinary)
//	"/abs/path"      that binary, named by its path
//
// Errors wrap ErrRequirements when the binary is not installed or cannot be
// built here (tests skip); an unknown name or a missing binary that was
// asked for explicitly by path or $PODCHRON_RUNC_UPSTREAM is a plain error.
func ResolveRuntime(ctx context.Context, spec string) (Runtime, error) {
	switch spec {
	case "", "runc":
		return installedRuntime("runc", RuncBinary, "apt-get install runc")
	case "crun":
		rt, err := installedRuntime("crun", CrunBinary, "apt-get install crun")
		if err == nil {
			err = crunHostProblem()
		}
		return rt, err
	case "runc-upstream":
		if p := os.Getenv(RuncUpstreamEnv); p != "" {
			if err := checkExecutable(p); err != nil {
				return Runtime{}, fmt.Errorf("runtime runc-upstream: $%s: %w", RuncUpstreamEnv, err)
			}
			return Runtime{Name: spec, Binary: p}, nil
		}
		p, err := buildUpstreamRunc(ctx)
		if err != nil {
			return Runtime{}, fmt.Errorf("%w: runtime runc-upstream: $%s unset and scripts/build-runc.sh failed: %w",
				ErrRequirements, RuncUpstreamEnv, err)
		}
		return Runtime{Name: spec, Binary: p}, nil
	}
	if filepath.IsAbs(spec) {
		if err := checkExecutable(spec); err != nil {
			return Runtime{}, fmt.Errorf("runtime %s: %w", spec, err)
		}
		if filepath.Base(spec) == "crun" {
			if err := crunHostProblem(); err != nil {
				return Runtime{}, err
			}
		}
		return Runtime{Name: spec, Binary: spec}, nil
	}
	return Runtime{}, fmt.Errorf("unknown OCI runtime %q (want one of %s, or an absolute path)",
		spec, strings.Join(RuntimeNames, ", "))
}

// crunHostProblem says why crun cannot run containers on this host: crun
// (1.8 and later alike) refuses a hybrid cgroup host (v1 controllers, v2 at
// /sys/fs/cgroup/unified) whose v2 hierarchy holds controllers. Hosts
// booted by systemd in hybrid mode have them all on v1; on others
// scripts/install-deps.sh binds the leftovers (hugetlb) to v1.
func crunHostProblem() error {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil || st.Type == unix.CGROUP2_SUPER_MAGIC {
		return nil
	}
	if err := unix.Statfs("/sys/fs/cgroup/unified", &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil
	}
	b, err := os.ReadFile("/sys/fs/cgroup/unified/cgroup.controllers")
	if c := strings.TrimSpace(string(b)); err == nil && c != "" {
		return fmt.Errorf("%w: runtime crun: crun refuses hybrid cgroup hosts whose cgroup v2 hierarchy holds controllers (here: %s);"+
			" bind them to cgroup v1 as systemd does (scripts/install-deps.sh: mount -t cgroup -o <controller> cgroup /sys/fs/cgroup/<controller>)",
			ErrRequirements, c)
	}
	return nil
}

func installedRuntime(name, bin, hint string) (Runtime, error) {
	if err := checkExecutable(bin); err != nil {
		return Runtime{}, fmt.Errorf("%w: runtime %s: %w (%s)", ErrRequirements, name, err, hint)
	}
	return Runtime{Name: name, Binary: bin}, nil
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// Version is the first line of `<binary> --version`, e.g.
// "runc version 1.1.5+ds1" or "crun version 1.8.1".
func (r Runtime) Version(ctx context.Context) (string, error) {
	return firstLine(ctx, r.Binary, "--version")
}

// VersionInfo is the rest of `--version` joined on one line (commit, spec,
// Go, libseccomp), for logs.
func (r Runtime) VersionInfo(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, r.Binary, "--version").Output()
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return ""
	}
	return strings.Join(lines[1:], "; ")
}

func (r Runtime) String() string {
	if r.Name == r.Binary || r.Name == "" {
		return r.Binary
	}
	return r.Name + " (" + r.Binary + ")"
}

// Versions are what a harness runs with, logged at start so that every
// test's output says which runtime, containerd and kernel it saw.
type Versions struct {
	Runtime    string // first line of the runtime's --version
	Containerd string // `containerd --version`
	Kernel     string // uname -r
}

func (v Versions) String() string {
	return fmt.Sprintf("runtime %q, containerd %q, kernel %s", v.Runtime, v.Containerd, v.Kernel)
}

// CollectVersions runs `--version` of rt and containerd and reads uname -r.
func CollectVersions(ctx context.Context, rt Runtime) (Versions, error) {
	return collectVersions(ctx, rt, ContainerdBinary)
}

func collectVersions(ctx context.Context, rt Runtime, containerdBin string) (Versions, error) {
	var v Versions
	var errs []error
	var err error
	if v.Runtime, err = rt.Version(ctx); err != nil {
		errs = append(errs, fmt.Errorf("runtime %s: %w", rt, err))
	}
	if v.Containerd, err = firstLine(ctx, containerdBin, "--version"); err != nil {
		errs = append(errs, fmt.Errorf("containerd: %w", err))
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		errs = append(errs, fmt.Errorf("uname: %w", err))
	} else {
		v.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return v, errors.Join(errs...)
}

func firstLine(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line), nil
}

var upstreamRunc struct {
	sync.Mutex
	path string
}

// buildUpstreamRunc runs scripts/build-runc.sh (found from the working
// directory up to the podchron module root) once per process.
func buildUpstreamRunc(ctx context.Context) (string, error) {
	upstreamRunc.Lock()
	defer upstreamRunc.Unlock()
	if upstreamRunc.path != "" {
		return upstreamRunc.path, nil
	}
	script, err := findRepoFile(filepath.Join("scripts", "build-runc.sh"))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, tailString(stderr.String(), 2000))
	}
	var p string
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			p = l
		}
	}
	if err := checkExecutable(p); err != nil {
		return "", fmt.Errorf("%s printed %q: %w", script, p, err)
	}
	upstreamRunc.path = p
	return p, nil
}

// findRepoFile looks for rel in the working directory and its parents, up
// to the directory holding podchron's go.mod.
func findRepoFile(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			return filepath.Join(dir, rel), nil
		}
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/podchron/podchron\n")) {
			return "", fmt.Errorf("%s not found in the podchron module at %s", rel, dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory", rel)
		}
		dir = parent
	}
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// resolveRuntime: the configured runtime, by binary or by name, else the
// default.
func (cfg Config) resolveRuntime(ctx context.Context) (Runtime, error) {
	r := cfg.Runtime
	switch {
	case r.Binary != "":
		if err := checkExecutable(r.Binary); err != nil {
			return Runtime{}, fmt.Errorf("%w: runtime %s: %w", ErrRequirements, r, err)
		}
		if r.Name == "" {
			r.Name = r.Binary
		}
		return r, nil
	case r.Name != "":
		return ResolveRuntime(ctx, r.Name)
	}
	return DefaultRuntime(ctx)
}

// checkDefaultRuntime is CheckRequirements' cheap look at the default
// runtime: installed binaries are checked, an upstream runc that would be
// built is not.
func checkDefaultRuntime() error {
	spec := os.Getenv(RuntimeEnv)
	if spec == "runc-upstream" && os.Getenv(RuncUpstreamEnv) == "" {
		return nil
	}
	_, err := ResolveRuntime(context.Background(), spec)
	return err
}
