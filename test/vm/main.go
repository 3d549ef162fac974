// Command vm runs podchron's real-kernel Go tests (by default the eBPF probe
// tests in ./internal/probe) inside a qemu guest booted from another kernel,
// e.g. Debian's 5.10, 6.1 and 6.12 cloud kernels, to prove the probes load,
// attach and report correctly there too.
//
//	go run ./test/vm [flags] [-- test binary flags...]
//
// See test/vm/README.md.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	defaultPkg     = "./internal/probe"
	selfTestPkg    = "./test/vm/testdata/smoke"
	defaultKernels = "test/vm/kernels.txt"
	cniLoopback    = "/usr/lib/cni/loopback"
	// util-linux's unshare, ahead of busybox's in the guest's PATH: busybox's
	// makes no cgroup namespaces, which the nested-node probe test needs.
	defaultExtra    = cniLoopback + ",/usr/bin/unshare:/usr/local/bin/unshare"
	defaultBusybox  = "/bin/busybox"
	kvmBootTimeout  = 20 * time.Second
	defaultCmdline  = "console=ttyS0,115200 panic=-1 oops=panic mitigations=off rdinit=/init"
	guestTestDir    = "/podchron/tests"
	guestSourceRoot = "/src"
)

type options struct {
	kernelsFile string
	kernels     string
	pkgs        string
	tags        string
	cacheDir    string
	workDir     string
	extra       string
	modules     string
	busybox     string
	qemu        string
	accel       string
	memMiB      int
	smp         int
	timeout     time.Duration
	bootTimeout time.Duration
	appendArgs  string
	env         string
	logDir      string
	showBoot    bool
	keep        bool
	switchRoot  bool
	systemd     bool
	testArgs    []string
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if v := os.Getenv(k); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		fmt.Fprintf(os.Stderr, "podchron-vm: ignoring bad %s=%q\n", k, v)
	}
	return def
}

func defaultCacheDir() string {
	if d := os.Getenv("PODCHRON_VM_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "podchron-vm")
	}
	return "/var/cache/podchron-vm"
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("podchron-vm", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./test/vm [flags] [-- test binary flags]\n\n"+
			"Boots each kernel of the kernel list under qemu and runs the Go test\n"+
			"package(s) inside it. Flags after -- go to the test binaries\n"+
			"(-run X is accepted and turned into -test.run X).\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.kernelsFile, "kernels-file", envOr("PODCHRON_VM_KERNELS_FILE", defaultKernels), "kernel list, one Debian package ([release:]package) or absolute image path per line (env PODCHRON_VM_KERNELS_FILE)")
	fs.StringVar(&o.kernels, "kernel", os.Getenv("PODCHRON_VM_KERNEL"), "comma-separated kernels to use instead of the kernel list (env PODCHRON_VM_KERNEL)")
	fs.StringVar(&o.pkgs, "pkg", os.Getenv("PODCHRON_VM_PKGS"), "comma-separated Go packages whose tests run in the guest (env PODCHRON_VM_PKGS; default "+defaultPkg+", or the runner's self-test "+selfTestPkg+" while "+defaultPkg+" does not exist)")
	fs.StringVar(&o.tags, "tags", os.Getenv("PODCHRON_VM_TAGS"), "build tags for go test -c (env PODCHRON_VM_TAGS)")
	fs.StringVar(&o.cacheDir, "cache", defaultCacheDir(), "download cache (env PODCHRON_VM_CACHE)")
	fs.StringVar(&o.workDir, "workdir", "", "directory for test binaries and initramfs (default: a temporary directory)")
	fs.StringVar(&o.extra, "extra", envOr("PODCHRON_VM_EXTRA", defaultExtra), "comma-separated host files copied to the same path in the guest, with their shared libraries; SRC:DST to place elsewhere (env PODCHRON_VM_EXTRA)")
	fs.StringVar(&o.modules, "modules", os.Getenv("PODCHRON_VM_MODULES"), "comma-separated kernel modules (from the kernel package) to insmod in the guest, dependencies included (env PODCHRON_VM_MODULES)")
	fs.StringVar(&o.busybox, "busybox", envOr("PODCHRON_VM_BUSYBOX", defaultBusybox), "static busybox binary (Debian busybox-static)")
	fs.StringVar(&o.qemu, "qemu", envOr("PODCHRON_VM_QEMU", "qemu-system-x86_64"), "qemu binary")
	fs.StringVar(&o.accel, "accel", envOr("PODCHRON_VM_ACCEL", "tcg"), "tcg, kvm, or auto (kvm if /dev/kvm is usable and the guest reaches /init within 20s under it, else tcg) (env PODCHRON_VM_ACCEL)")
	fs.IntVar(&o.memMiB, "mem", 2048, "guest memory in MiB")
	fs.IntVar(&o.smp, "smp", 2, "guest CPUs")
	fs.DurationVar(&o.timeout, "timeout", envDuration("PODCHRON_VM_TIMEOUT", 10*time.Minute), "overall timeout per kernel, boot included (env PODCHRON_VM_TIMEOUT)")
	fs.DurationVar(&o.bootTimeout, "boot-timeout", envDuration("PODCHRON_VM_BOOT_TIMEOUT", 3*time.Minute), "timeout until the guest runs /init")
	fs.StringVar(&o.appendArgs, "append", os.Getenv("PODCHRON_VM_APPEND"), "extra kernel command line arguments (env PODCHRON_VM_APPEND)")
	fs.StringVar(&o.env, "env", os.Getenv("PODCHRON_VM_ENV"), "comma-separated KEY=VALUE exported in the guest before the tests (env PODCHRON_VM_ENV)")
	fs.StringVar(&o.logDir, "log-dir", "", "where console logs are written (default <cache>/logs)")
	fs.BoolVar(&o.showBoot, "show-boot", os.Getenv("PODCHRON_VM_SHOW_BOOT") == "1", "also print kernel boot messages before /init (they always go to the log)")
	fs.BoolVar(&o.switchRoot, "switch-root", os.Getenv("PODCHRON_VM_SWITCH_ROOT") == "1", "copy the initramfs into a tmpfs and switch_root into it before the mounts, so / is a mount as on a real node (runc's pivot_root refuses the initramfs rootfs) (env PODCHRON_VM_SWITCH_ROOT=1)")
	fs.BoolVar(&o.systemd, "systemd", os.Getenv("PODCHRON_VM_SYSTEMD") == "1", "PID 1 is the host's systemd (copied with its libraries) instead of busybox init, and it runs the tests as a oneshot service: a node whose cgroups systemd owns, for the systemd cgroup driver (needs -switch-root) (env PODCHRON_VM_SYSTEMD=1)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (test binaries, initramfs)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.testArgs = fs.Args()
	switch o.accel {
	case "tcg", "kvm", "auto":
	default:
		return nil, fmt.Errorf("-accel must be tcg, kvm or auto, got %q", o.accel)
	}
	if o.systemd && !o.switchRoot {
		// systemd would run from the initramfs rootfs, where runc cannot
		// pivot_root into a container: the mode is for a node.
		return nil, errors.New("-systemd needs -switch-root")
	}
	return o, nil
}

// testBinaryArgs turns `go test` style flags (-run X, -v, -count=1) into the
// -test.* form a compiled test binary expects, and adds a -test.timeout
// slightly shorter than the VM timeout so a hung test panics with stacks
// instead of being killed silently.
func testBinaryArgs(in []string, vmTimeout time.Duration) []string {
	short := map[string]bool{"run": true, "skip": true, "v": true, "count": true, "timeout": true,
		"short": true, "failfast": true, "bench": true, "benchtime": true, "cpu": true,
		"parallel": true, "list": true, "shuffle": true, "benchmem": true, "fullpath": true}
	var out []string
	hasTimeout := false
	for _, a := range in {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "-test.") && !strings.HasPrefix(a, "--test.") {
			name := strings.TrimLeft(a, "-")
			key, _, _ := strings.Cut(name, "=")
			if short[key] {
				a = "-test." + name
			}
		}
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "test.timeout") {
			hasTimeout = true
		}
		out = append(out, a)
	}
	if !hasTimeout {
		t := vmTimeout - time.Minute
		if t < time.Minute {
			t = vmTimeout * 3 / 4
		}
		out = append([]string{"-test.timeout=" + t.Round(time.Second).String()}, out...)
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// repoRoot finds the directory of the podchron go.mod, starting at cwd.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/podchron/podchron") {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", fmt.Errorf("run from inside the podchron module (no go.mod for github.com/podchron/podchron above the current directory)")
		}
		d = p
	}
}

type builtTest struct {
	guestTest
	hostBinary  string
	hostTestdir string // package testdata dir, "" if none
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "podchron-vm: "+format+"\n", a...)
}

func buildTests(root, work string, pkgs []string, tags string) ([]builtTest, error) {
	var out []builtTest
	used := map[string]int{}
	for _, pkg := range pkgs {
		listArgs := []string{"list", "-f", "{{.Dir}}"}
		if tags != "" {
			listArgs = append(listArgs, "-tags", tags)
		}
		cmd := exec.Command("go", append(listArgs, pkg)...)
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		dirB, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s: %w", pkg, err)
		}
		dir := strings.TrimSpace(string(dirB))
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("package %s (%s) is outside the module", pkg, dir)
		}
		name := filepath.Base(dir)
		used[name]++
		if used[name] > 1 {
			name = fmt.Sprintf("%s%d", name, used[name])
		}
		bin := filepath.Join(work, name+".test")
		args := []string{"test", "-c", "-o", bin}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		args = append(args, pkg)
		start := time.Now()
		logf("building %s: CGO_ENABLED=0 go %s", pkg, strings.Join(args, " "))
		cmd = exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building the test binary of %s failed: %w", pkg, err)
		}
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s has no test files (go test -c wrote no binary)", pkg)
		}
		if err := requireStatic(bin); err != nil {
			return nil, fmt.Errorf("%s: test binary %w; it must be static (CGO_ENABLED=0)", pkg, err)
		}
		st, _ := os.Stat(bin)
		logf("built %s (%.1f MiB) in %s", bin, float64(st.Size())/(1<<20), time.Since(start).Round(100*time.Millisecond))
		bt := builtTest{
			guestTest: guestTest{
				Name:   name,
				Binary: guestTestDir + "/" + name + ".test",
				Dir:    guestSourceRoot + "/" + filepath.ToSlash(rel),
			},
			hostBinary: bin,
		}
		if fi, err := os.Stat(filepath.Join(dir, "testdata")); err == nil && fi.IsDir() {
			bt.hostTestdir = filepath.Join(dir, "testdata")
		}
		out = append(out, bt)
	}
	return out, nil
}

// addTree copies a host directory tree (regular files and symlinks) into the
// archive under dst.
func addTree(a *archive, hostDir, dst string) error {
	return filepath.WalkDir(hostDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(hostDir, p)
		g := filepath.ToSlash(filepath.Join(dst, rel))
		switch {
		case d.IsDir():
			return a.mkdirAll(g)
		case d.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return a.addSymlink(g, t)
		case d.Type().IsRegular():
			return a.addHostFile(g, p)
		}
		return nil
	})
}

type initramfsInput struct {
	busybox string
	tests   []builtTest
	extra   []string
	k       *kernel
	modules []string // relative to k.ModulesDir
	initSh  string
	runSh   string
	systemd bool // add systemd (systemdExtra) and the unit that runs runSh (initConfig.Systemd)
}

func buildInitramfs(in initramfsInput, out string) error {
	a := newArchive()
	for _, d := range []string{"dev", "proc", "sys", "tmp", "run", "root", "etc", "var/tmp", "mnt", "usr/lib/cni"} {
		if err := a.mkdirAll(d); err != nil {
			return err
		}
	}
	_ = a.addDir("tmp", 0o1777)
	_ = a.addDir("var/tmp", 0o1777)
	_ = a.addDir("root", 0o700)
	// The kernel opens /dev/console for /init's stdio before devtmpfs is
	// mounted (CONFIG_DEVTMPFS_MOUNT is off in Debian's cloud kernel).
	if err := a.addCharDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	if err := a.addCharDev("dev/null", 0o666, 1, 3); err != nil {
		return err
	}
	if err := a.addBusybox(in.busybox); err != nil {
		return err
	}
	for _, f := range []struct{ p, s string }{
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		{"etc/group", "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n"},
		{"etc/hosts", "127.0.0.1\tlocalhost podchron-vm\n::1\tlocalhost ip6-localhost\n"},
		{"etc/nsswitch.conf", "hosts: files dns\n"},
		{"etc/hostname", "podchron-vm\n"},
		// The guest has no DNS; containerd copies this file into every pod
		// sandbox and fails RunPodSandbox without it.
		{"etc/resolv.conf", "# podchron-vm: no network but lo and what the guest makes itself\n"},
	} {
		if err := a.addBytes(f.p, 0o644, []byte(f.s)); err != nil {
			return err
		}
	}
	if err := a.addSymlink("var/run", "/run"); err != nil {
		return err
	}
	if err := a.addBytes("init", 0o755, []byte(in.initSh)); err != nil {
		return err
	}
	if err := a.addBytes(guestRunScript, 0o755, []byte(in.runSh)); err != nil {
		return err
	}
	if err := a.addBytes(guestInittab, 0o644, []byte(inittab)); err != nil {
		return err
	}
	if in.systemd {
		if err := a.addBytes(guestUnitPath, 0o644, []byte(guestUnit)); err != nil {
			return err
		}
		in.extra = append(slices.Clone(in.extra), systemdExtra...)
	}
	for _, t := range in.tests {
		if err := a.addHostFile(t.Binary, t.hostBinary); err != nil {
			return err
		}
		if err := a.mkdirAll(t.Dir); err != nil {
			return err
		}
		if t.hostTestdir != "" {
			if err := addTree(a, t.hostTestdir, t.Dir+"/testdata"); err != nil {
				return err
			}
		}
	}
	for _, e := range in.extra {
		src, dst, ok := strings.Cut(e, ":")
		if !ok {
			dst = src
		}
		if !filepath.IsAbs(src) || !filepath.IsAbs(dst) {
			return fmt.Errorf("-extra %q: paths must be absolute", e)
		}
		if _, err := os.Stat(src); err != nil {
			hint := ""
			switch {
			case src == cniLoopback:
				hint = " (apt-get install containernetworking-plugins)"
			case slices.Contains(systemdExtra, src):
				hint = " (-systemd copies the host's systemd: apt-get install systemd)"
			}
			return fmt.Errorf("extra file %s: %w%s", src, err, hint)
		}
		if _, err := a.addHostFileWithDeps(dst, src); err != nil {
			return fmt.Errorf("extra file %s: %w", src, err)
		}
	}
	for _, m := range in.modules {
		g := filepath.ToSlash(filepath.Join("/lib/modules", in.k.Release, m))
		if err := a.addHostFile(g, filepath.Join(in.k.ModulesDir, m)); err != nil {
			return err
		}
	}
	return a.writeGzip(out)
}

func newNonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type kernelReport struct {
	label   string
	release string         // guest uname -r
	counts  map[string]int // tests (subtests included) passed, failed, skipped
	paths   []string       // kernel-dependent probe paths the tests proved
	outcome string
	retried bool // booted twice: the first boot hit a TCG text-patch oops
	code    int
	boot    time.Duration
	total   time.Duration
	log     string
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	wall := time.Now()
	o, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		logf("%v", err)
		return exitSetup
	}
	root, err := repoRoot()
	if err != nil {
		logf("%v", err)
		return exitSetup
	}
	if _, err := exec.LookPath(o.qemu); err != nil {
		logf("%s not found: apt-get install qemu-system-x86 (see test/vm/install-deps.sh)", o.qemu)
		return exitSetup
	}

	pkgs := splitList(o.pkgs)
	if len(pkgs) == 0 {
		if fi, err := os.Stat(filepath.Join(root, "internal", "probe")); err == nil && fi.IsDir() {
			pkgs = []string{defaultPkg}
		} else {
			logf("NOTE: %s does not exist yet; running the runner's self-test %s instead", defaultPkg, selfTestPkg)
			pkgs = []string{selfTestPkg}
		}
	}

	var entries []string
	if o.kernels != "" {
		if entries, err = parseKernelList(strings.Join(splitList(o.kernels), "\n")); err != nil {
			logf("-kernel: %v", err)
			return exitSetup
		}
	} else {
		kf := o.kernelsFile
		if !filepath.IsAbs(kf) {
			kf = filepath.Join(root, kf)
		}
		b, err := os.ReadFile(kf)
		if err != nil {
			logf("%v", err)
			return exitSetup
		}
		if entries, err = parseKernelList(string(b)); err != nil {
			logf("%s: %v", kf, err)
			return exitSetup
		}
	}
	if len(entries) == 0 {
		logf("no kernels to test")
		return exitSetup
	}

	work := o.workDir
	if work == "" {
		if work, err = os.MkdirTemp("", "podchron-vm-"); err != nil {
			logf("%v", err)
			return exitSetup
		}
		if !o.keep {
			defer os.RemoveAll(work)
		} else {
			logf("keeping the work directory %s", work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		logf("%v", err)
		return exitSetup
	}
	logDir := o.logDir
	if logDir == "" {
		logDir = filepath.Join(o.cacheDir, "logs")
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		logf("%v", err)
		return exitSetup
	}
	pruneLogs(logDir, 30)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tests, err := buildTests(root, work, pkgs, o.tags)
	if err != nil {
		logf("%v", err)
		return exitSetup
	}
	store := &kernelStore{CacheDir: o.cacheDir, Log: logf}
	var reports []kernelReport
	final := 0
	for _, entry := range entries {
		rep := runKernel(ctx, o, store, entry, tests, work, logDir)
		reports = append(reports, rep)
		if rep.code != 0 && final == 0 {
			final = rep.code
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(os.Stderr, "\n==== podchron-vm summary (%s, packages %s) ====\n", time.Since(wall).Round(100*time.Millisecond), strings.Join(pkgs, " "))
	for _, r := range reports {
		fmt.Fprintf(os.Stderr, "%-48s %-20s exit=%d boot=%s total=%s log=%s\n", r.label, r.outcome, r.code,
			r.boot.Round(100*time.Millisecond), r.total.Round(100*time.Millisecond), r.log)
	}
	fmt.Fprintf(os.Stderr, "\n%-28s %-20s %5s %5s %5s  %s\n", "uname -r", "outcome", "pass", "fail", "skip", "kernel paths (from the tests)")
	for _, r := range reports {
		paths := strings.Join(r.paths, "; ")
		if paths == "" {
			paths = "-"
		}
		fmt.Fprintf(os.Stderr, "%-28s %-20s %5d %5d %5d  %s\n", orUnknown(r.release), r.outcome,
			r.counts["PASS"], r.counts["FAIL"], r.counts["SKIP"], paths)
	}
	return final
}

func runKernel(ctx context.Context, o *options, store *kernelStore, entry string, tests []builtTest, work, logDir string) kernelReport {
	rep := kernelReport{label: entry, outcome: "SETUP ERROR", code: exitSetup}
	fmt.Fprintf(os.Stderr, "\n==== podchron-vm: kernel %s ====\n", entry)
	k, err := store.resolve(entry)
	if err != nil {
		logf("%v", err)
		return rep
	}
	rep.label = k.Label
	logf("kernel image %s (release %s)", k.Image, orUnknown(k.Release))
	if k.Config != "" {
		b, err := os.ReadFile(k.Config)
		if err == nil {
			if probs := checkKconfig(parseKconfig(string(b))); len(probs) > 0 {
				for _, p := range probs {
					logf("WARNING: kernel config: %s", p)
				}
			} else {
				logf("kernel config %s: BPF, BTF, tracing, cgroups, initramfs, devtmpfs, 8250 console built in", filepath.Base(k.Config))
			}
		}
	} else {
		logf("no kernel config found next to the image; make sure it has CONFIG_DEBUG_INFO_BTF=y, CONFIG_BPF_SYSCALL=y, CONFIG_SERIAL_8250_CONSOLE=y, CONFIG_DEVTMPFS=y, CONFIG_BLK_DEV_INITRD=y")
	}
	mods, err := moduleSet(k.ModulesDir, splitList(o.modules))
	if err != nil {
		logf("%v", err)
		return rep
	}
	if len(mods) > 0 {
		logf("kernel modules to load (dependencies first): %s", strings.Join(mods, " "))
	}
	nonce := newNonce()
	var guestMods []string
	for _, m := range mods {
		guestMods = append(guestMods, filepath.ToSlash(filepath.Join("/lib/modules", k.Release, m)))
	}
	var gts []guestTest
	for _, t := range tests {
		gts = append(gts, t.guestTest)
	}
	initrd := filepath.Join(work, "initramfs-"+safeName(k.Label)+".cpio.gz")
	start := time.Now()
	initSh, runSh := initScripts(initConfig{
		Nonce:   nonce,
		Tests:   gts,
		Args:    testBinaryArgs(o.testArgs, o.timeout),
		Modules: guestMods,
		Env:     splitList(o.env),

		SwitchRoot: o.switchRoot,
		Systemd:    o.systemd,
	})
	err = buildInitramfs(initramfsInput{
		busybox: o.busybox,
		tests:   tests,
		extra:   splitList(o.extra),
		systemd: o.systemd,
		k:       k,
		modules: mods,
		initSh:  initSh,
		runSh:   runSh,
	}, initrd)
	if err != nil {
		logf("initramfs: %v", err)
		return rep
	}
	if st, err := os.Stat(initrd); err == nil {
		logf("initramfs %s (%.1f MiB) built in %s", initrd, float64(st.Size())/(1<<20), time.Since(start).Round(100*time.Millisecond))
	}

	logPath := filepath.Join(logDir, safeName(k.Label)+"-"+time.Now().Format("20060102-150405")+".log")
	rep.log = logPath
	lf, err := os.Create(logPath)
	if err != nil {
		logf("%v", err)
		return rep
	}
	defer lf.Close()

	cmdline := defaultCmdline
	if o.appendArgs != "" {
		cmdline += " " + o.appendArgs
	}
	cfg := qemuConfig{
		Qemu: o.qemu, Kernel: k.Image, Initrd: initrd, Append: cmdline,
		MemMiB: o.memMiB, SMP: o.smp, Timeout: o.timeout, BootTimeout: o.bootTimeout,
		Nonce: nonce, ShowBoot: o.showBoot, Out: os.Stdout, Log: lf,
	}
	accel := o.accel
	if accel == "auto" {
		if err := kvmUsable(); err != nil {
			logf("accel auto: /dev/kvm not usable (%v), using tcg", err)
			accel = "tcg"
		} else {
			accel = "kvm"
		}
	}
	cfg.Accel = accel
	if o.accel == "auto" && accel == "kvm" && cfg.BootTimeout > kvmBootTimeout {
		cfg.BootTimeout = kvmBootTimeout
	}
	logf("booting under qemu (%s, %d MiB, %d CPUs, timeout %s); console log: %s", accel, o.memMiB, o.smp, o.timeout, logPath)
	logf("qemu command: %s %s", o.qemu, strings.Join(quoteAll(qemuArgs(cfg)), " "))
	r := runQemu(ctx, cfg)
	if o.accel == "auto" && accel == "kvm" && ctx.Err() == nil && !r.Watcher.sawInit &&
		(r.Outcome == outcomeBootTimeout || r.Outcome == outcomeQemuError || r.Outcome == outcomeNoMarker) {
		why := fmt.Sprintf("guest did not reach /init within %s", cfg.BootTimeout)
		if r.Outcome != outcomeBootTimeout {
			why = fmt.Sprintf("qemu failed (%v): %s", r.QemuExit, lastLine(r.QemuStderr))
		}
		logf("accel auto: kvm unusable here (%s); falling back to tcg", why)
		fmt.Fprintf(lf, "---- kvm failed (%s); retrying under tcg ----\n", why)
		cfg.Accel, cfg.BootTimeout = "tcg", o.bootTimeout
		r = runQemu(ctx, cfg)
	}
	if cfg.Accel == "tcg" && ctx.Err() == nil && r.Outcome == outcomePanic && r.Watcher.textPatchFault() {
		// One retry, said aloud: the first oops was the emulator's stale
		// int3 from a kernel text patch (consoleWatcher.textPatchFault).
		// A second one fails the run like any panic.
		first := r.Watcher.panicLines()
		if len(first) > 3 {
			first = first[:3]
		}
		logf("RETRY: the guest oopsed on an int3 in kernel text under TCG (a stale breakpoint from the kernel's live text patching, an emulator race; not a test result): %s; booting it once more", strings.Join(first, " | "))
		fmt.Fprintf(lf, "---- int3 oops in kernel text under tcg; retrying once ----\n")
		rep.retried = true
		r = runQemu(ctx, cfg)
	}
	if r.QemuStderr != "" {
		fmt.Fprintf(lf, "---- qemu stderr ----\n%s\n", r.QemuStderr)
	}
	rep.boot, rep.total = r.BootTime, r.Total
	rep.release, rep.counts, rep.paths = r.Watcher.release, r.Watcher.counts, r.Watcher.paths
	rep.outcome = r.Outcome.String()
	if rep.retried {
		rep.outcome += " (2nd boot)"
	}
	rep.code = r.Watcher.exitCode(r.Outcome)
	report(os.Stderr, k, cfg, r, logPath)
	return rep
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shellQuote(s)
	}
	return out
}

func pruneLogs(dir string, keep int) {
	ms, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(ms) <= keep {
		return
	}
	sort.Slice(ms, func(i, j int) bool {
		a, _ := os.Stat(ms[i])
		b, _ := os.Stat(ms[j])
		return a != nil && b != nil && a.ModTime().Before(b.ModTime())
	})
	for _, m := range ms[:len(ms)-keep] {
		_ = os.Remove(m)
	}
}

// report prints the verdict for one kernel with the lines that explain it.
func report(w io.Writer, k *kernel, c qemuConfig, r *qemuRun, logPath string) {
	cw := r.Watcher
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(w, "---- %s ----\n", title)
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintf(w, "\n==== podchron-vm: %s: %s ====\n", k.Label, r.Outcome)
	if cw.sawInit {
		fmt.Fprintf(w, "guest reached /init after %s host wall time (%s)\n", r.BootTime.Round(100*time.Millisecond), cw.initLine)
	}
	fmt.Fprintf(w, "qemu ran for %s (%s)\n", r.Total.Round(100*time.Millisecond), c.Accel)
	section("skipped tests", cw.skips)
	section("per-binary results", cw.results)
	switch r.Outcome {
	case outcomePass:
	case outcomeTestsFailed:
		fmt.Fprintf(w, "the tests failed in the guest with exit status %d\n", cw.exitStatus)
		section("failures", cw.fails)
	case outcomePanic:
		fmt.Fprintln(w, "the guest kernel panicked (oops=panic: an oops counts as a panic):")
		section("kernel panic", cw.panicLines())
		section("test failures before the panic", cw.fails)
	case outcomeBootTimeout:
		fmt.Fprintf(w, "the guest did not reach /init within %s (kernel hang? wrong console? try -show-boot)\n", c.BootTimeout)
		section("last console lines", cw.tail(40))
	case outcomeTimeout:
		fmt.Fprintf(w, "TIMEOUT: the run did not finish within %s; qemu was killed\n", c.Timeout)
		section("failures so far", cw.fails)
		section("last console lines", cw.tail(40))
	case outcomeNoMarker:
		fmt.Fprintf(w, "qemu exited (%v) without the guest printing its exit marker: /init died, the guest rebooted, or the console was lost\n", r.QemuExit)
		section("last console lines", cw.tail(40))
	case outcomeQemuError:
		fmt.Fprintf(w, "qemu failed: %v\n", r.QemuExit)
	}
	if r.Outcome != outcomePass {
		section("possible BPF verifier rejections (full verifier logs are in the test output above)", dedupe(cw.verifier))
	}
	if r.Outcome != outcomePanic {
		section("kernel warnings", cw.warnings)
	}
	if r.QemuStderr != "" && (r.Outcome != outcomePass || r.QemuExit != nil) {
		section("qemu stderr", strings.Split(r.QemuStderr, "\n"))
	}
	fmt.Fprintf(w, "full console log: %s\n", logPath)
}
