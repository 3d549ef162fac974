// Package smoke is the self-test of the VM runner (go run ./test/vm -pkg
// ./test/vm/testdata/smoke). It checks that the guest environment /init sets
// up is the one the probe tests expect: BTF, tracefs, bpffs, pure cgroup v2,
// a working bpf(2) with tracepoint and tp_btf attachment, and the CNI
// loopback plugin with its shared libraries.
//
// It lives under testdata/ so `go test ./...` on the host never runs it.
package smoke

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
)

const cniLoopback = "/usr/lib/cni/loopback"

func inVM(t *testing.T) {
	t.Helper()
	if os.Getenv("PODCHRON_VM") != "1" {
		t.Skip("PODCHRON_VM!=1: this self-test is meant to run in the podchron VM (go run ./test/vm)")
	}
}

func TestUname(t *testing.T) {
	inVM(t)
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	str := func(b [65]int8) string {
		var s []byte
		for _, c := range b {
			if c == 0 {
				break
			}
			s = append(s, byte(c))
		}
		return string(s)
	}
	t.Logf("uname: %s %s %s %s", str(u.Sysname), str(u.Release), str(u.Version), str(u.Machine))
	if os.Getuid() != 0 {
		t.Fatalf("uid %d, want 0", os.Getuid())
	}
}

// mounts maps mount point -> fs type from /proc/self/mountinfo.
func mounts(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		l := sc.Text()
		pre, post, ok := strings.Cut(l, " - ")
		if !ok {
			continue
		}
		pf, sf := strings.Fields(pre), strings.Fields(post)
		if len(pf) >= 5 && len(sf) >= 1 {
			m[pf[4]] = sf[0]
		}
	}
	return m
}

func TestMounts(t *testing.T) {
	inVM(t)
	m := mounts(t)
	for mp, fs := range map[string]string{
		"/proc":               "proc",
		"/sys":                "sysfs",
		"/dev":                "devtmpfs",
		"/tmp":                "tmpfs",
		"/sys/kernel/tracing": "tracefs",
		"/sys/kernel/debug":   "debugfs",
		"/sys/fs/bpf":         "bpf",
		"/sys/fs/cgroup":      "cgroup2",
	} {
		if m[mp] != fs {
			t.Errorf("%s: mounted as %q, want %q", mp, m[mp], fs)
		}
	}
	for mp, fs := range m {
		if fs == "cgroup" {
			t.Errorf("cgroup v1 hierarchy mounted at %s; the VM must be pure cgroup v2", mp)
		}
	}
}

func TestBTF(t *testing.T) {
	inVM(t)
	st, err := os.Stat("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("/sys/kernel/btf/vmlinux: %d bytes", st.Size())
	start := time.Now()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		t.Fatal(err)
	}
	t.Logf("parsed kernel BTF in %s; task_struct has %d members", time.Since(start).Round(time.Millisecond), len(task.Members))
}

func TestTracefs(t *testing.T) {
	inVM(t)
	for _, p := range []string{
		"/sys/kernel/tracing/events/sched/sched_process_exec/id",
		"/sys/kernel/tracing/events/sched/sched_process_exit/id",
		"/sys/kernel/tracing/available_events",
	} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

// counterProg returns instructions that atomically add 1 to m[0].
func counterProg(m *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

func newCounter(t *testing.T) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func readCounter(t *testing.T, m *ebpf.Map) uint64 {
	t.Helper()
	var v uint64
	if err := m.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// execLoopback runs the CNI loopback plugin's VERSION command: it exercises
// exec (counted by the probes below) and proves the plugin's shared
// libraries made it into the initramfs.
func execLoopback(t *testing.T) {
	t.Helper()
	cmd := exec.Command(cniLoopback)
	cmd.Env = []string{"CNI_COMMAND=VERSION"}
	cmd.Stdin = strings.NewReader(`{"cniVersion":"0.4.0"}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", cniLoopback, err, out)
	}
	if !strings.Contains(string(out), "supportedVersions") {
		t.Fatalf("%s VERSION: unexpected output %s", cniLoopback, out)
	}
}

func loadProg(t *testing.T, spec *ebpf.ProgramSpec) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("verifier rejected %s: %+v", spec.Name, ve)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestTracepointCountsExec(t *testing.T) {
	inVM(t)
	m := newCounter(t)
	p := loadProg(t, &ebpf.ProgramSpec{
		Name: "smoke_tp_exec", Type: ebpf.TracePoint, License: "GPL",
		Instructions: counterProg(m),
	})
	l, err := link.Tracepoint("sched", "sched_process_exec", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before := readCounter(t, m)
	execLoopback(t)
	if after := readCounter(t, m); after <= before {
		t.Fatalf("tracepoint sched:sched_process_exec counter %d -> %d after an exec", before, after)
	}
}

func TestTpBTFCountsExec(t *testing.T) {
	inVM(t)
	m := newCounter(t)
	p := loadProg(t, &ebpf.ProgramSpec{
		Name: "smoke_tpbtf_exec", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp,
		AttachTo: "sched_process_exec", License: "GPL",
		Instructions: counterProg(m),
	})
	l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before := readCounter(t, m)
	execLoopback(t)
	if after := readCounter(t, m); after <= before {
		t.Fatalf("tp_btf/sched_process_exec counter %d -> %d after an exec", before, after)
	}
}

func TestBPFPin(t *testing.T) {
	inVM(t)
	m := newCounter(t)
	pin := filepath.Join("/sys/fs/bpf", "podchron-smoke")
	if err := m.Pin(pin); err != nil {
		t.Fatal(err)
	}
	defer m.Unpin()
	m2, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2.Close()
}

func TestCgroup2(t *testing.T) {
	inVM(t)
	root := "/sys/fs/cgroup"
	ctrl, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("root cgroup.subtree_control: %s", strings.TrimSpace(string(ctrl)))
	enabled := map[string]bool{}
	for _, c := range strings.Fields(string(ctrl)) {
		enabled[c] = true
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !enabled[c] {
			t.Errorf("controller %s not enabled at the cgroup2 root", c)
		}
	}
	dir := filepath.Join(root, "podchron-smoke")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	cmd := exec.Command("/bin/sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "0::/podchron-smoke" {
		t.Fatalf("/proc/pid/cgroup = %q, want 0::/podchron-smoke", got)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("cgroup id (inode) of %s: %d", dir, st.Ino)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// TestOrphansAreReaped checks PID 1 reaps reparented orphans, as systemd
// does on a real node (a shell as PID 1 would leave them as zombies).
func TestOrphansAreReaped(t *testing.T) {
	inVM(t)
	out, err := exec.Command("/bin/sh", "-c", "sleep 0.2 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(out))
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return // gone: reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %s not reaped by PID 1: %s", pid, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFaultInjection lets the runner's failure reporting be exercised by
// hand: go run ./test/vm -pkg ./test/vm/testdata/smoke -env
// PODCHRON_SMOKE_FAULT=X with X one of fail, verifier, hang, panic, poweroff.
// Without the variable it is skipped.
func TestFaultInjection(t *testing.T) {
	inVM(t)
	switch f := os.Getenv("PODCHRON_SMOKE_FAULT"); f {
	case "":
		t.Skip("PODCHRON_SMOKE_FAULT not set")
	case "fail":
		t.Fatal("injected test failure")
	case "verifier":
		// Reads R2 before it is written: the verifier must reject this.
		loadProg(t, &ebpf.ProgramSpec{
			Name: "smoke_bad", Type: ebpf.TracePoint, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()},
		})
	case "hang":
		time.Sleep(time.Hour)
	case "panic":
		if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0o200); err != nil {
			t.Fatal(err)
		}
	case "poweroff":
		_ = exec.Command("/sbin/poweroff", "-f").Run()
		time.Sleep(time.Minute)
	default:
		t.Fatalf("unknown PODCHRON_SMOKE_FAULT=%q", f)
	}
}
