package event

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Every event type of the C enum (the generated constants) has a Go name
// and decodes: a type added in events.h without its Go side fails here.
func TestEveryCEventTypeIsKnown(t *testing.T) {
	for typ := EventType(1); typ < eventTypeMax; typ++ {
		if name := typ.String(); name == "" || strings.HasPrefix(name, "event(") {
			t.Errorf("event type %d of events.h has no Go name (%q)", typ, name)
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

func execRecord(cni bool) []byte {
	var r PodchronExecEvent
	r.Hdr = PodchronEventHeader{Type: uint32(EventExec), Origin: uint32(OriginCNI), KtimeNs: 1e9, CgroupId: 42, Tgid: 100, Pid: 100, Ppid: 1}
	setStr(r.Hdr.Comm[:], "bridge")
	setStr(r.Filename[:], "/opt/cni/bin/bridge")
	args := "/opt/cni/bin/bridge\x00--verbose\x00"
	setStr(r.Args[:], args)
	r.ArgsSize = uint32(len(args))
	if !cni {
		return raw(&r)
	}
	r.Flags = uint32(PodchronExecFlagsEXEC_F_CNI)
	var c PodchronCniInfo
	setStr(c.Command[:], "ADD")
	setStr(c.ContainerId[:], "abc123")
	setStr(c.Ifname[:], "eth0")
	setStr(c.Netns[:], "/var/run/netns/cni-1")
	setStr(c.Args[:], "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-0;K8S_POD_UID=u-1;K8S_POD_INFRA_CONTAINER_ID=abc123")
	return raw(&r, raw(&c))
}

func TestDecodeExecWithCNI(t *testing.T) {
	ev, err := NewDecoder(bootClock{}).Decode(execRecord(true))
	if err != nil {
		t.Fatal(err)
	}
	e := ev.(*ExecEvent)
	if e.Filename != "/opt/cni/bin/bridge" || !slices.Equal(e.Args, []string{"/opt/cni/bin/bridge", "--verbose"}) || e.Comm != "bridge" || e.CgroupID != 42 {
		t.Fatalf("exec: %+v", e)
	}
	want := CNIRun{Command: "ADD", ContainerID: "abc123", IfName: "eth0", NetNS: "/var/run/netns/cni-1",
		Args:         "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-0;K8S_POD_UID=u-1;K8S_POD_INFRA_CONTAINER_ID=abc123",
		PodNamespace: "ns", PodName: "web-0", PodUID: "u-1", InfraContainerID: "abc123"}
	if e.CNI == nil || *e.CNI != want {
		t.Fatalf("cni: %+v", e.CNI)
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
		r := PodchronExitEvent{Hdr: PodchronEventHeader{Type: uint32(EventExit), Tgid: 7}, ExitCode: tc.status, StartNs: 5}
		ev, err := NewDecoder(bootClock{}).Decode(raw(&r))
		if err != nil {
			t.Fatal(err)
		}
		e := ev.(*ExitEvent)
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
	h.Type = uint32(EventSignalGenerate)
	if _, err := d.Decode(raw(&h)); !errors.Is(err, ErrShortEvent) {
		t.Errorf("truncated signal: %v", err)
	}
	// CNI flag set but the cni_info is missing.
	rec := execRecord(true)
	if _, err := d.Decode(rec[:unsafe.Sizeof(PodchronExecEvent{})]); !errors.Is(err, ErrShortEvent) {
		t.Errorf("exec without its cni_info: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(execRecord(true))
	f.Add(execRecord(false))
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
	exec := execRecord(false)
	cni := execRecord(true)
	exit := raw(&PodchronExitEvent{Hdr: PodchronEventHeader{Type: uint32(EventExit), Tgid: 7}, ExitCode: 3 << 8})
	sig := raw(&PodchronSignalEvent{Hdr: PodchronEventHeader{Type: uint32(EventSignalGenerate), Tgid: 7}, Sig: 15})
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
