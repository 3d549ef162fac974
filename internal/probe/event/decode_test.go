package event

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/podchron/podchron/internal/fact/kernel"
)

// Every event type of the C enum (the generated constants) has a Go name
// and decodes: a type added in events.h without its Go side fails here.
func TestEveryCEventTypeIsKnown(t *testing.T) {
	for typ := kernel.EventType(1); typ < kernel.EventType(PodchronEventTypeEVENT_TYPE_MAX); typ++ {
		if name := typ.String(); name == "" || strings.HasPrefix(name, "event(") {
			t.Errorf("event type %d of events.h has no Go name (%q)", typ, name)
		}
	}
	if got, want := len(kernel.EventTypes()), int(PodchronEventTypeEVENT_TYPE_MAX)-1; got != want {
		t.Errorf("kernel.EventTypes() has %d types, events.h %d", got, want)
	}
}

// The fact package spells the C enums' values out (it imports no generated
// code); they must be the values bpf2go generated from bpf/include/events.h.
func TestFactEnumsAreTheCEnums(t *testing.T) {
	pairs := []struct {
		name      string
		fact, gen uint32
	}{
		{"EVENT_EXEC", uint32(kernel.EventExec), uint32(PodchronEventTypeEVENT_EXEC)},
		{"EVENT_FORK", uint32(kernel.EventFork), uint32(PodchronEventTypeEVENT_FORK)},
		{"EVENT_EXIT", uint32(kernel.EventExit), uint32(PodchronEventTypeEVENT_EXIT)},
		{"EVENT_SIGNAL_GENERATE", uint32(kernel.EventSignalGenerate), uint32(PodchronEventTypeEVENT_SIGNAL_GENERATE)},
		{"EVENT_SIGNAL_DELIVER", uint32(kernel.EventSignalDeliver), uint32(PodchronEventTypeEVENT_SIGNAL_DELIVER)},
		{"EVENT_OOM_KILL", uint32(kernel.EventOOMKill), uint32(PodchronEventTypeEVENT_OOM_KILL)},
		{"EVENT_CGROUP_MKDIR", uint32(kernel.EventCgroupMkdir), uint32(PodchronEventTypeEVENT_CGROUP_MKDIR)},
		{"EVENT_CGROUP_RMDIR", uint32(kernel.EventCgroupRmdir), uint32(PodchronEventTypeEVENT_CGROUP_RMDIR)},
		{"ORIGIN_WATCHED", uint32(kernel.OriginWatched), uint32(PodchronEventOriginORIGIN_WATCHED)},
		{"ORIGIN_RUNTIME", uint32(kernel.OriginRuntime), uint32(PodchronEventOriginORIGIN_RUNTIME)},
		{"ORIGIN_CNI", uint32(kernel.OriginCNI), uint32(PodchronEventOriginORIGIN_CNI)},
		{"ORIGIN_TARGET", uint32(kernel.OriginTarget), uint32(PodchronEventOriginORIGIN_TARGET)},
		{"DISPOSITION_DEFAULT", uint32(kernel.DispositionDefault), uint32(PodchronSignalDispositionDISPOSITION_DEFAULT)},
		{"DISPOSITION_IGNORED", uint32(kernel.DispositionIgnored), uint32(PodchronSignalDispositionDISPOSITION_IGNORED)},
		{"DISPOSITION_HANDLER", uint32(kernel.DispositionHandler), uint32(PodchronSignalDispositionDISPOSITION_HANDLER)},
	}
	for _, p := range pairs {
		if p.fact != p.gen {
			t.Errorf("%s: internal/fact/kernel has %d, events.h %d", p.name, p.fact, p.gen)
		}
	}
}

func setStr(dst []int8, s string) {
	for i := range dst {
		dst[i] = 0
	}
	for i := 0; i < len(s) && i < len(dst); i++ {
		dst[i] = int8(s[i])
	}
}

func raw[T any](v *T, extra ...[]byte) []byte {
	b := slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)))
	for _, x := range extra {
		b = append(b, x...)
	}
	return b
}

const cniTestArgs = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-0;K8S_POD_UID=u-1;K8S_POD_INFRA_CONTAINER_ID=abc123"

// cniTestEnv is an environment as containerd's libcni lays it out: the
// runtime's own variables, then the CNI ones.
var cniTestEnv = []string{"PATH=/usr/bin:/bin", "HOME=/root",
	"CNI_COMMAND=ADD", "CNI_CONTAINERID=abc123", "CNI_NETNS=/var/run/netns/cni-1", "CNI_IFNAME=eth0",
	"CNI_ARGS=" + cniTestArgs, "CNI_PATH=/opt/cni/bin"}

// execRecord is an exec of a CNI directory's binary; env, when set, is
// appended the way the kernel program copies it (flags: cni_env's).
func execRecord(env []byte, envFlags uint32) []byte {
	var r PodchronExecEvent
	r.Hdr = PodchronEventHeader{Type: uint32(kernel.EventExec), Origin: uint32(kernel.OriginCNI), KtimeNs: 1e9, CgroupId: 42, Tgid: 100, Pid: 100, Ppid: 1}
	setStr(r.Hdr.Comm[:], "bridge")
	setStr(r.Filename[:], "/opt/cni/bin/bridge")
	args := "/opt/cni/bin/bridge\x00--verbose\x00"
	setStr(r.Args[:], args)
	r.ArgsSize = uint32(len(args))
	if env == nil {
		return raw(&r)
	}
	r.Flags = uint32(PodchronExecFlagsEXEC_F_CNI)
	var c PodchronCniEnv
	c.Flags = envFlags
	for i, b := range env {
		c.Data[i] = int8(b)
	}
	c.Size = uint32(len(env))
	return raw(&r, raw(&c))
}

func envBlock(vars ...string) []byte {
	return []byte(strings.Join(vars, "\x00") + "\x00")
}

var wantCNI = kernel.CNIRun{Command: "ADD", ContainerID: "abc123", IfName: "eth0", NetNS: "/var/run/netns/cni-1",
	Args: cniTestArgs, PodNamespace: "ns", PodName: "web-0", PodUID: "u-1", InfraContainerID: "abc123"}

func TestDecodeExecWithCNI(t *testing.T) {
	ev, err := NewDecoder(bootClock{}).Decode(execRecord(envBlock(cniTestEnv...), 0))
	if err != nil {
		t.Fatal(err)
	}
	e := ev.(*kernel.ExecEvent)
	if e.Filename != "/opt/cni/bin/bridge" || !slices.Equal(e.Args, []string{"/opt/cni/bin/bridge", "--verbose"}) || e.Comm != "bridge" || e.CgroupID != 42 {
		t.Fatalf("exec: %+v", e)
	}
	if e.CNI == nil || *e.CNI != wantCNI {
		t.Fatalf("cni: %+v", e.CNI)
	}
}

// An environment longer than the kernel's buffer arrives as its first and
// last halves; variables cut at the halves' edges are skipped, whole ones
// in either half are read.
func TestDecodeExecWithSplitCNIEnv(t *testing.T) {
	var c PodchronCniEnv
	half := len(c.Data) / 2
	head := envBlock("CNI_COMMAND=ADD", "CNI_CONTAINERID=abc123")
	head = append(head, []byte("CNI_IFNAME=cut-at-the-end-of-the-head-"+strings.Repeat("x", half))...)[:half]
	tail := []byte("CUT_AT_THE_START=" + strings.Repeat("y", half))
	tail = append(tail, 0)
	tail = append(tail, envBlock("CNI_NETNS=/var/run/netns/cni-1", "CNI_IFNAME=eth0", "CNI_ARGS="+cniTestArgs)...)
	tail = tail[len(tail)-half:]
	ev, err := NewDecoder(bootClock{}).Decode(execRecord(append(head, tail...), uint32(PodchronCniEnvFlagsCNI_ENV_F_SPLIT)))
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.(*kernel.ExecEvent).CNI; got == nil || *got != wantCNI {
		t.Fatalf("cni: %+v, want %+v", got, wantCNI)
	}
}

// A binary of a CNI directory run without CNI_COMMAND (by hand, or a
// plugin's helper) is an exec without CNI fields; so is one whose
// environment could not be read.
func TestDecodeExecInCNIDirWithoutCNICommand(t *testing.T) {
	for name, env := range map[string][]byte{
		"no CNI_COMMAND": envBlock("PATH=/usr/bin", "CNI_IFNAME=eth0"),
		"unreadable":     {},
	} {
		ev, err := NewDecoder(bootClock{}).Decode(execRecord(env, 0))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e := ev.(*kernel.ExecEvent); e.CNI != nil || e.Filename != "/opt/cni/bin/bridge" {
			t.Errorf("%s: %+v, CNI %+v", name, e, e.CNI)
		}
	}
}

func TestDecodeExit(t *testing.T) {
	for _, tc := range []struct {
		status uint32
		code   int
		sig    syscall.Signal
		core   bool
	}{
		{3 << 8, 3, 0, false},
		{9, 0, syscall.SIGKILL, false},
		{0x80 | 11, 0, syscall.SIGSEGV, true},
		{0, 0, 0, false},
	} {
		r := PodchronExitEvent{Hdr: PodchronEventHeader{Type: uint32(kernel.EventExit), Tgid: 7}, ExitCode: tc.status, StartNs: 5}
		ev, err := NewDecoder(bootClock{}).Decode(raw(&r))
		if err != nil {
			t.Fatal(err)
		}
		e := ev.(*kernel.ExitEvent)
		if e.ExitCode != tc.code || e.Signal != tc.sig || e.CoreDumped != tc.core {
			t.Errorf("status %#x: got code %d sig %v core %v", tc.status, e.ExitCode, e.Signal, e.CoreDumped)
		}
	}
}

func TestDecodeRejectsBadRecords(t *testing.T) {
	d := NewDecoder(bootClock{})
	if _, err := d.Decode(make([]byte, 10)); !errors.Is(err, ErrShortEvent) {
		t.Errorf("short header: %v", err)
	}
	h := PodchronEventHeader{Type: 77}
	if _, err := d.Decode(raw(&h)); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("unknown type: %v", err)
	}
	h.Type = uint32(kernel.EventSignalGenerate)
	if _, err := d.Decode(raw(&h)); !errors.Is(err, ErrShortEvent) {
		t.Errorf("truncated signal: %v", err)
	}
	// CNI flag set but the cni_env is missing.
	rec := execRecord(envBlock(cniTestEnv...), 0)
	if _, err := d.Decode(rec[:unsafe.Sizeof(PodchronExecEvent{})]); !errors.Is(err, ErrShortEvent) {
		t.Errorf("exec without its cni_env: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(execRecord(envBlock(cniTestEnv...), 0))
	f.Add(execRecord(nil, 0))
	d := NewDecoder(bootClock{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := d.Decode(b)
		if err == nil && ev.Hdr() == nil {
			t.Fatal("event without header")
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	d := NewDecoder(bootClock{})
	exec := execRecord(nil, 0)
	cni := execRecord(envBlock(cniTestEnv...), 0)
	exit := raw(&PodchronExitEvent{Hdr: PodchronEventHeader{Type: uint32(kernel.EventExit), Tgid: 7}, ExitCode: 3 << 8})
	sig := raw(&PodchronSignalEvent{Hdr: PodchronEventHeader{Type: uint32(kernel.EventSignalGenerate), Tgid: 7}, Sig: 15})
	for _, bc := range []struct {
		name string
		rec  []byte
	}{{"exec", exec}, {"exec+cni", cni}, {"exit", exit}, {"signal", sig}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(bc.rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bootClock maps boot time to the Unix epoch, for tests that do not look
// at wall times.
type bootClock struct{}

func (bootClock) Wall(ns uint64) time.Time { return time.Unix(0, int64(ns)) }
