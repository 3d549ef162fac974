package main

// Unit tests of the runner itself; they need neither root nor qemu. The
// end-to-end self-test is `go run ./test/vm -pkg ./test/vm/testdata/smoke`.

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseKernelList(t *testing.T) {
	got, err := parseKernelList("# comment\n\nlinux-image-cloud-amd64  # bookworm\n  /boot/vmlinuz-6.18 \nbullseye:linux-image-5.10.0-32-cloud-amd64\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"linux-image-cloud-amd64", "/boot/vmlinuz-6.18", "bullseye:linux-image-5.10.0-32-cloud-amd64"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if suite, pkg := splitSuite(want[2]); suite != "bullseye" || pkg != "linux-image-5.10.0-32-cloud-amd64" {
		t.Errorf("splitSuite = %q, %q", suite, pkg)
	}
	for _, bad := range []string{"two words\n", "relative/path\n", "Linux-Image\n", "Bullseye:linux-image-cloud-amd64\n", ":linux-image-cloud-amd64\n", "bullseye:\n"} {
		if _, err := parseKernelList(bad); err == nil {
			t.Errorf("parseKernelList(%q): no error", bad)
		}
	}
}

func TestSourcesForRelease(t *testing.T) {
	deb822 := `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: https://vendor.example/apt
Suites: stable
Components: main

Types: deb
Enabled: no
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
`
	oneLine := `deb [arch=amd64 signed-by=/k.gpg] http://other.example/debian bookworm-backports main # comment
deb-src http://other.example/debian bookworm main
# deb http://commented.example/debian bookworm main
`
	sys := append(parseDeb822Sources(deb822), parseOneLineSources(oneLine)...)
	got := sourcesForRelease(sys, "bookworm", "bullseye")
	want := []string{
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian bullseye bullseye-updates main",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian-security bullseye-security main contrib",
		"deb [signed-by=/k.gpg] http://other.example/debian bullseye-backports main",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	dir := t.TempDir()
	osr := filepath.Join(dir, "os-release")
	if err := os.WriteFile(osr, []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME=bookworm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := osCodename(osr); err != nil || c != "bookworm" {
		t.Errorf("osCodename = %q, %v", c, err)
	}
}

func TestShippedKernelList(t *testing.T) {
	b, err := os.ReadFile("kernels.txt")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := parseKernelList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) == 0 {
		t.Fatal("kernels.txt lists no kernel")
	}
}

func TestAptParsing(t *testing.T) {
	depends := `linux-image-cloud-amd64
  Depends: linux-image-6.1.0-56-cloud-amd64
`
	if got := imageDependency(depends); got != "linux-image-6.1.0-56-cloud-amd64" {
		t.Errorf("imageDependency = %q", got)
	}
	pkg := `linux-image-6.1.0-56-cloud-amd64
  Depends: kmod
  Depends: linux-base
 |Depends: initramfs-tools
  Depends: <linux-initramfs-tool>
`
	if got := imageDependency(pkg); got != "" {
		t.Errorf("imageDependency(real image) = %q, want empty", got)
	}
	policy := `linux-image-cloud-amd64:
  Installed: (none)
  Candidate: 6.1.192-2
  Version table:
     6.1.192-2 500
`
	if got := candidateVersion(policy); got != "6.1.192-2" {
		t.Errorf("candidateVersion = %q", got)
	}
	if got := candidateVersion("x:\n  Installed: (none)\n  Candidate: (none)\n"); got != "" {
		t.Errorf("candidateVersion(none) = %q", got)
	}
}

func TestKconfig(t *testing.T) {
	cfg := parseKconfig("CONFIG_BPF_SYSCALL=y\n# CONFIG_DEBUG_INFO_BTF is not set\nCONFIG_SERIAL_8250_CONSOLE=m\nCONFIG_X=\"a\"\n")
	if cfg["CONFIG_BPF_SYSCALL"] != "y" || cfg["CONFIG_DEBUG_INFO_BTF"] != "n" || cfg["CONFIG_X"] != "a" {
		t.Fatalf("parseKconfig: %v", cfg)
	}
	probs := strings.Join(checkKconfig(cfg), "\n")
	for _, want := range []string{"CONFIG_DEBUG_INFO_BTF is not set", "CONFIG_SERIAL_8250_CONSOLE=m", "CONFIG_BLK_DEV_INITRD not set"} {
		if !strings.Contains(probs, want) {
			t.Errorf("checkKconfig: missing %q in\n%s", want, probs)
		}
	}
	if strings.Contains(probs, "CONFIG_BPF_SYSCALL") {
		t.Errorf("checkKconfig flagged a built-in option:\n%s", probs)
	}
}

func TestTestBinaryArgs(t *testing.T) {
	got := testBinaryArgs([]string{"-run", "TestX", "-count=1", "-v", "-test.short", "pos"}, 10*time.Minute)
	want := []string{"-test.timeout=9m0s", "-test.run", "TestX", "-test.count=1", "-test.v", "-test.short", "pos"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got = testBinaryArgs([]string{"-timeout=30s"}, 10*time.Minute)
	if !reflect.DeepEqual(got, []string{"-test.timeout=30s"}) {
		t.Fatalf("explicit timeout: got %q", got)
	}
	got = testBinaryArgs(nil, 40*time.Second)
	if !reflect.DeepEqual(got, []string{"-test.timeout=30s"}) {
		t.Fatalf("short vm timeout: got %q", got)
	}
}

func TestShellQuote(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"plain", "", "a b", "it's", `"$HOME" \n *`, "-test.run=^Test(A|B)$"} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != s {
			t.Errorf("shellQuote(%q) round trip: %q", s, out)
		}
	}
}

func feed(w *consoleWatcher, text string) {
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		w.line(l)
	}
}

func TestConsoleWatcherPass(t *testing.T) {
	w := newConsoleWatcher("n1")
	feed(w, `[    0.000000] Linux version 6.1.0
PODCHRON-VM-INIT[n1] uptime=2.50s kernel=6.1.0
=== RUN   TestA
    probe_test.go:1: KERNEL-PATHS ancestor-helper=true
--- PASS: TestA (0.01s)
=== RUN   TestB
--- SKIP: TestB (0.00s)
=== RUN   TestC
    --- PASS: TestC/x (0.00s)
    --- SKIP: TestC/y (0.00s)
--- PASS: TestC (0.00s)
PASS
PODCHRON-VM-RESULT[n1] probe rc=0
PODCHRON-VM-EXIT[n1]=0
[    6.0] reboot: Power down`)
	if !w.sawInit || !w.exitSeen || w.exitStatus != 0 {
		t.Fatalf("watcher state: %+v", w)
	}
	if o := w.classify(false, false); o != outcomePass || w.exitCode(o) != 0 {
		t.Fatalf("classify = %v", o)
	}
	if !reflect.DeepEqual(w.results, []string{"probe rc=0"}) {
		t.Fatalf("results %q", w.results)
	}
	if w.release != "6.1.0" || !reflect.DeepEqual(w.counts, map[string]int{"PASS": 3, "SKIP": 2}) ||
		!reflect.DeepEqual(w.paths, []string{"ancestor-helper=true"}) {
		t.Fatalf("release %q counts %v paths %q", w.release, w.counts, w.paths)
	}
}

func TestConsoleWatcherFailureAndInterleaving(t *testing.T) {
	w := newConsoleWatcher("n2")
	feed(w, `PODCHRON-VM-INIT[n2] uptime=2.50s
    probe_test.go:10: load program: permission denied: R2 !read_ok (3 line(s) omitted)
--- FAIL: TestLoad (0.10s)
FAIL
PODCHRON-VM-EXIT[other]=0
[   7.1] random: crng initPODCHRON-VM-EXIT[n2]=1
`)
	o := w.classify(false, false)
	if o != outcomeTestsFailed || w.exitCode(o) != 1 {
		t.Fatalf("classify = %v, code %d (the marker with a foreign nonce must be ignored)", o, w.exitCode(o))
	}
	if len(w.fails) != 2 || len(w.verifier) != 1 {
		t.Fatalf("fails %q verifier %q", w.fails, w.verifier)
	}
}

func TestConsoleWatcherPanic(t *testing.T) {
	w := newConsoleWatcher("n3")
	feed(w, `PODCHRON-VM-INIT[n3] uptime=2.50s
=== RUN   TestAttach
[   12.0] BUG: kernel NULL pointer dereference, address: 0000000000000008
[   12.0] Oops: 0000 [#1] PREEMPT SMP NOPTI
[   12.0] RIP: 0010:bpf_prog_123+0x10/0x40
[   12.0] Call Trace:
[   12.0]  <TASK>
[   12.0] Kernel panic - not syncing: Fatal exception
[   12.0] ---[ end Kernel panic - not syncing: Fatal exception ]---`)
	o := w.classify(false, false)
	if o != outcomePanic || w.exitCode(o) != exitPanic {
		t.Fatalf("classify = %v", o)
	}
	pl := w.panicLines()
	if len(pl) != 7 || !strings.Contains(pl[0], "BUG: kernel NULL pointer") {
		t.Fatalf("panic lines start at the wrong place: %q", pl)
	}
}

// A panic whose first oops is an int3 in kernel text is the emulator's
// (textPatchFault); one that only ends in an int3 after another oops, or an
// ordinary oops, is not.
func TestConsoleWatcherTextPatchFault(t *testing.T) {
	for _, c := range []struct {
		name, console string
		want          bool
	}{
		{"6.12 int3", `[   15.998056] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI
[   15.998675] RIP: 0010:kmem_cache_alloc_lru_noprof+0x10e/0x300
[   16.008491] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI
[   16.008891] Kernel panic - not syncing: Fatal exception in interrupt`, true},
		{"5.10 int3", `[    9.1] int3: 0000 [#1] SMP NOPTI
[    9.1] Kernel panic - not syncing: Fatal exception`, true},
		{"null deref first", `[   12.0] Oops: 0000 [#1] PREEMPT SMP NOPTI
[   12.1] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI
[   12.2] Kernel panic - not syncing: Fatal exception`, false},
		{"int3 oops without a panic", `[   12.0] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI`, false},
	} {
		w := newConsoleWatcher("n")
		feed(w, c.console)
		if got := w.textPatchFault(); got != c.want {
			t.Errorf("%s: textPatchFault = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestConsoleWatcherNoMarkerAndTimeouts(t *testing.T) {
	w := newConsoleWatcher("n4")
	feed(w, "[ 0.1] Linux version\n[ 1.0] Run /init as init process\n")
	if o := w.classify(false, true); o != outcomeBootTimeout || w.exitCode(o) != exitBootHang {
		t.Errorf("boot timeout: %v", o)
	}
	w.line("PODCHRON-VM-INIT[n4] uptime=1s")
	if o := w.classify(true, false); o != outcomeTimeout || w.exitCode(o) != exitTimeout {
		t.Errorf("timeout: %v", o)
	}
	if o := w.classify(false, false); o != outcomeNoMarker || w.exitCode(o) != exitNoMarker {
		t.Errorf("no marker: %v", o)
	}
	// A status that arrives after all still wins over the timeout.
	w.line("PODCHRON-VM-EXIT[n4]=0")
	if o := w.classify(true, false); o != outcomePass {
		t.Errorf("marker then kill: %v", o)
	}
}

// readNewc parses a newc archive into name -> (mode, data).
func readNewc(t *testing.T, r io.Reader) map[string]cpioEntry {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cpioEntry{}
	off := 0
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, rmaj, rmin, nameSize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		dataOff := align(off + 110 + nameSize)
		data := b[dataOff : dataOff+size]
		off = align(dataOff + size)
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = cpioEntry{name: name, mode: uint32(mode), data: data, rdevMajor: uint32(rmaj), rdevMinor: uint32(rmin)}
	}
}

func TestArchive(t *testing.T) {
	a := newArchive()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.addBytes("init", 0o755, []byte("#!/bin/sh\n")))
	must(a.addBytes("/usr/lib/cni/x", 0o644, []byte("abcde")))
	must(a.addSymlink("bin/sh", "/bin/busybox"))
	must(a.addCharDev("dev/console", 0o600, 5, 1))
	must(a.addDir("tmp", 0o1777))
	if err := a.addBytes("init", 0o644, nil); err == nil {
		t.Error("duplicate entry accepted")
	}
	if err := a.addBytes("init/x", 0o644, nil); err == nil {
		t.Error("file below a regular file accepted")
	}
	var buf bytes.Buffer
	must(a.writeTo(&buf))
	got := readNewc(t, bytes.NewReader(buf.Bytes()))
	check := func(name string, mode uint32, data string) {
		t.Helper()
		e, ok := got[name]
		if !ok {
			t.Fatalf("%s missing; have %v", name, got)
		}
		if e.mode != mode || string(e.data) != data {
			t.Errorf("%s: mode %o data %q, want %o %q", name, e.mode, e.data, mode, data)
		}
	}
	check("init", modeReg|0o755, "#!/bin/sh\n")
	check("usr", modeDir|0o755, "")
	check("usr/lib/cni", modeDir|0o755, "")
	check("usr/lib/cni/x", modeReg|0o644, "abcde")
	check("bin/sh", modeLink|0o777, "/bin/busybox")
	check("dev/console", modeChr|0o600, "")
	check("tmp", modeDir|0o1777, "")
	if e := got["dev/console"]; e.rdevMajor != 5 || e.rdevMinor != 1 {
		t.Errorf("dev/console rdev %d:%d", e.rdevMajor, e.rdevMinor)
	}

	// GNU cpio, when present, must read it too.
	if cpio, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command(cpio, "-it", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -it: %v", err)
		}
		if !strings.Contains(string(out), "usr/lib/cni/x\n") {
			t.Errorf("cpio -it output:\n%s", out)
		}
	}
	// And gzip output must decompress to the same stream.
	dir := t.TempDir()
	must(a.writeGzip(filepath.Join(dir, "i.cpio.gz")))
	f, err := os.Open(filepath.Join(dir, "i.cpio.gz"))
	must(err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	must(err)
	if len(readNewc(t, zr)) != len(got) {
		t.Error("gzip archive differs")
	}
}

func TestHostFileWithDeps(t *testing.T) {
	var dyn string
	for _, c := range []string{cniLoopback, "/bin/ls", "/usr/bin/env"} {
		if requireStatic(c) != nil && fileExists(c) {
			dyn = c
			break
		}
	}
	if dyn == "" {
		t.Skip("no dynamically linked host binary to test with")
	}
	a := newArchive()
	added, err := a.addHostFileWithDeps(dyn, dyn)
	if err != nil {
		t.Fatal(err)
	}
	var libc, interp bool
	for _, p := range added {
		libc = libc || strings.HasPrefix(filepath.Base(p), "libc.so")
		interp = interp || strings.HasPrefix(filepath.Base(p), "ld-linux")
	}
	if !libc || !interp || !a.has(dyn) {
		t.Fatalf("%s: added %q", dyn, added)
	}
}

func TestInitScripts(t *testing.T) {
	initSh, runSh := initScripts(initConfig{
		Nonce:   "abc",
		Tests:   []guestTest{{Name: "probe", Binary: "/podchron/tests/probe.test", Dir: "/src/internal/probe"}},
		Args:    []string{"-test.timeout=9m0s", "-test.run", "Test(A|B)"},
		Modules: []string{"/lib/modules/6.1/kernel/net/llc/llc.ko"},
		Env:     []string{"FOO=bar baz"},
	})
	for _, c := range []struct {
		script string
		want   []string
	}{
		{initSh, []string{
			"PODCHRON_VM=1",
			"mount -t proc",
			"cgroup2 cgroup2 nosuid,nodev,noexec,nsdelegate",
			"/sys/fs/bpf",
			"/sys/kernel/tracing",
			"PODCHRON-VM-INIT[abc]",
			"exec /bin/busybox init",
		}},
		{runSh, []string{
			"PODCHRON_VM=1",
			"export 'FOO=bar baz'",
			"insmod /lib/modules/6.1/kernel/net/llc/llc.ko",
			"/podchron/tests/probe.test -test.v -test.timeout=9m0s -test.run 'Test(A|B)'",
			`PODCHRON-VM-EXIT[abc]=$status`,
			"poweroff -f",
		}},
	} {
		for _, want := range c.want {
			if !strings.Contains(c.script, want) {
				t.Errorf("script lacks %q:\n%s", want, c.script)
			}
		}
		if sh, err := exec.LookPath("sh"); err == nil {
			if out, err := exec.Command(sh, "-n", "-c", c.script).CombinedOutput(); err != nil {
				t.Errorf("sh -n: %v: %s", err, out)
			}
		}
	}
	if !strings.Contains(inittab, guestRunScript) {
		t.Errorf("inittab %q does not run %s", inittab, guestRunScript)
	}
}

func TestModuleSet(t *testing.T) {
	// Uses a kernel already unpacked in the cache by an earlier VM run.
	dirs, _ := filepath.Glob(filepath.Join(defaultCacheDir(), "debs", "*", "lib", "modules", "*"))
	if len(dirs) == 0 {
		t.Skip("no unpacked kernel in the cache; run go run ./test/vm once")
	}
	mods, err := moduleSet(dirs[0], []string{"bridge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 2 || !strings.HasSuffix(mods[len(mods)-1], "/bridge.ko") {
		t.Fatalf("moduleSet(bridge) = %q, want its dependencies then bridge.ko", mods)
	}
	if _, err := moduleSet(dirs[0], []string{"no_such_module"}); err == nil {
		t.Error("unknown module accepted")
	}
}

func TestSkipsAndDedupe(t *testing.T) {
	w := newConsoleWatcher("n5")
	feed(w, `=== RUN   TestV1
    probe_test.go:709: no v1 memory controller mounted on this host
--- SKIP: TestV1 (0.02s)
    a_test.go:1: load program: invalid argument: Unreleased reference
    a_test.go:2: load program: invalid argument: Unreleased reference
    b_test.go:3: load program: permission denied`)
	if len(w.skips) != 1 || !strings.HasSuffix(w.skips[0], ": no v1 memory controller mounted on this host") {
		t.Errorf("skips %q", w.skips)
	}
	d := dedupe(w.verifier)
	if len(d) != 2 || !strings.HasSuffix(d[0], "[x2]") {
		t.Errorf("dedupe %q", d)
	}
}

// TestInitScriptsSwitchRoot: with SwitchRoot, /init first copies the
// initramfs into a tmpfs and switch_roots into it, and the /init run again
// there (the marker file present) goes on with the mounts; without it,
// nothing of the kind.
func TestInitScriptsSwitchRoot(t *testing.T) {
	cfg := initConfig{Nonce: "abc", Tests: []guestTest{{Name: "node", Binary: "/podchron/tests/node.test", Dir: "/src/x"}}}
	plain, _ := initScripts(cfg)
	cfg.SwitchRoot = true
	switched, _ := initScripts(cfg)
	if strings.Contains(plain, "switch_root") || strings.Contains(plain, guestSwitchedMarker) {
		t.Errorf("without SwitchRoot /init switches root:\n%s", plain)
	}
	for _, want := range []string{
		"if [ ! -e " + guestSwitchedMarker + " ]",
		"mount -t tmpfs -o mode=0755,size=90% rootfs /newroot",
		": >/newroot" + guestSwitchedMarker,
		"exec switch_root /newroot /init",
	} {
		if !strings.Contains(switched, want) {
			t.Errorf("/init lacks %q:\n%s", want, switched)
		}
	}
	// The switch comes before the first mount, the mounts after it.
	if i, j := strings.Index(switched, "exec switch_root"), strings.Index(switched, "mount -t proc"); i < 0 || j < i {
		t.Errorf("switch_root at %d, first proc mount at %d: want the switch first", i, j)
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if out, err := exec.Command(sh, "-n", "-c", switched).CombinedOutput(); err != nil {
			t.Errorf("sh -n: %v: %s", err, out)
		}
	}
}

// TestModuleSetXZ: a kernel whose modules are xz-compressed (Debian's
// 6.12): moduleSet finds them, reads their dependencies and returns plain
// .ko files it decompressed next to them. Uses the bridge module and its
// dependencies from a kernel in the cache, copied compressed into a
// temporary tree.
func TestModuleSetXZ(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("no xz(1) on this host (apt-get install xz-utils)")
	}
	src := map[string]string{}
	for _, m := range []string{"bridge", "stp", "llc"} {
		ms, _ := filepath.Glob(filepath.Join(defaultCacheDir(), "debs", "*", "lib", "modules", "*", "kernel", "net", "*", m+".ko*"))
		if len(ms) == 0 {
			t.Skipf("no %s module in the cache; run go run ./test/vm once", m)
		}
		src[m] = ms[0]
	}
	dir := t.TempDir()
	for m, p := range src {
		dst := filepath.Join(dir, "kernel", "net", m, m+".ko.xz")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		var b []byte
		var err error
		if strings.HasSuffix(p, ".xz") {
			b, err = os.ReadFile(p)
		} else {
			b, err = exec.Command("xz", "-c", p).Output()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := moduleSet(dir, []string{"bridge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 3 || !strings.HasSuffix(mods[2], "bridge/bridge.ko") {
		t.Fatalf("moduleSet(bridge) = %q, want llc, stp (any order) then bridge/bridge.ko", mods)
	}
	for _, m := range mods {
		if _, err := elf.Open(filepath.Join(dir, m)); err != nil {
			t.Errorf("%s: not a decompressed module: %v", m, err)
		}
	}
}

// TestInitScriptsSystemd: with Systemd, /init execs systemd (busybox init
// only if that fails) with the test unit as its one unit, the unit runs the
// run script on the console with no default dependencies, and -systemd is
// refused without -switch-root.
func TestInitScriptsSystemd(t *testing.T) {
	cfg := initConfig{Nonce: "abc", SwitchRoot: true, Tests: []guestTest{{Name: "node", Binary: "/podchron/tests/node.test", Dir: "/src/x"}}}
	plain, _ := initScripts(cfg)
	cfg.Systemd = true
	sd, _ := initScripts(cfg)
	if strings.Contains(plain, guestSystemd) {
		t.Errorf("without Systemd /init runs systemd:\n%s", plain)
	}
	i, j := strings.Index(sd, "exec "+guestSystemd+" --unit="+guestUnitName), strings.Index(sd, "exec /bin/busybox init")
	if i < 0 || j < i || i < strings.Index(sd, "mount -t proc") {
		t.Errorf("/init: systemd exec at %d, busybox init at %d: want the mounts, then systemd, then busybox init as the fallback:\n%s", i, j, sd)
	}
	for _, want := range []string{"DefaultDependencies=no", "Type=oneshot", "ExecStart=" + guestRunScript, "StandardOutput=tty", "TTYPath=/dev/console"} {
		if !strings.Contains(guestUnit, want) {
			t.Errorf("the unit lacks %q:\n%s", want, guestUnit)
		}
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if out, err := exec.Command(sh, "-n", "-c", sd).CombinedOutput(); err != nil {
			t.Errorf("sh -n: %v: %s", err, out)
		}
	}
	if _, err := parseFlags([]string{"-systemd"}); err == nil || !strings.Contains(err.Error(), "-switch-root") {
		t.Errorf("-systemd alone: %v, want a refusal naming -switch-root", err)
	}
	if o, err := parseFlags([]string{"-systemd", "-switch-root"}); err != nil || !o.systemd {
		t.Errorf("-systemd -switch-root: %+v, %v", o, err)
	}
}
