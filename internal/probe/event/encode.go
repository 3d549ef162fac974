package event

import (
	"unsafe"

	"github.com/podchron/podchron/internal/fact/kernel"
)

// EncodeForTest builds the raw ring buffer record the kernel would send for
// ev, so benchmarks and tests elsewhere can drive the decoder. Times are not
// encoded (the decoder stamps them from BootNS).
func EncodeForTest(ev kernel.Event) []byte {
	h := ev.Hdr()
	hdr := PodchronEventHeader{Type: uint32(h.Type), Origin: uint32(h.Origin), KtimeNs: h.BootNS, CgroupId: h.CgroupID, Tgid: h.TGID, Pid: h.PID, Ppid: h.PPID}
	putStr(hdr.Comm[:], h.Comm)
	switch e := ev.(type) {
	case *kernel.ExecEvent:
		r := PodchronExecEvent{Hdr: hdr}
		putStr(r.Filename[:], e.Filename)
		n := 0
		for _, a := range e.Args {
			if n+len(a)+1 > len(r.Args) {
				r.Flags |= uint32(PodchronExecFlagsEXEC_F_ARGS_TRUNCATED)
				break
			}
			putStr(r.Args[n:], a)
			n += len(a) + 1
		}
		r.ArgsSize = uint32(n)
		if e.CNI == nil {
			return bytesOf(&r)
		}
		r.Flags |= uint32(PodchronExecFlagsEXEC_F_CNI)
		// The environment a runtime passes a plugin: its own, then the CNI
		// variables.
		env := "PATH=/usr/sbin:/usr/bin:/sbin:/bin\x00CNI_COMMAND=" + e.CNI.Command +
			"\x00CNI_CONTAINERID=" + e.CNI.ContainerID + "\x00CNI_NETNS=" + e.CNI.NetNS +
			"\x00CNI_IFNAME=" + e.CNI.IfName + "\x00CNI_ARGS=" + e.CNI.Args + "\x00CNI_PATH=/opt/cni/bin\x00"
		var c PodchronCniEnv
		c.Size = uint32(putBytes(c.Data[:], env))
		return append(bytesOf(&r), bytesOf(&c)...)
	case *kernel.ForkEvent:
		return bytesOf(&PodchronForkEvent{Hdr: hdr, ChildTgid: e.ChildTGID, ChildPid: e.ChildPID})
	case *kernel.ExitEvent:
		st := e.RawStatus
		if st == 0 {
			st = uint32(e.ExitCode)<<8 | uint32(e.Signal)
		}
		r := PodchronExitEvent{Hdr: hdr, ExitCode: st}
		if e.NSInit {
			r.Flags |= uint32(PodchronExitFlagsEXIT_F_NS_INIT)
		}
		return bytesOf(&r)
	case *kernel.SignalEvent:
		r := PodchronSignalEvent{Hdr: hdr, Sig: uint32(e.Signal), Code: e.Code, Result: int32(e.Result), TargetTgid: e.TargetTGID, TargetPid: e.TargetPID, TargetCgroupId: e.TargetCgroupID, Disposition: uint32(e.Disposition)}
		putStr(r.TargetComm[:], e.TargetComm)
		for _, f := range []struct {
			set  bool
			flag PodchronSignalTargetFlags
		}{{e.TargetNSInit, PodchronSignalTargetFlagsSIGNAL_TARGET_NS_INIT}, {e.SenderWatched, PodchronSignalTargetFlagsSIGNAL_SENDER_WATCHED},
			{e.SenderOutside, PodchronSignalTargetFlagsSIGNAL_SENDER_OUTSIDE}} {
			if f.set {
				r.TargetFlags |= uint32(f.flag)
			}
		}
		return bytesOf(&r)
	case *kernel.SignalDeliverEvent:
		return bytesOf(&PodchronSignalDeliverEvent{Hdr: hdr, Sig: uint32(e.Signal), Code: e.Code, Disposition: uint32(e.Disposition)})
	case *kernel.OOMEvent:
		r := PodchronOomEvent{Hdr: hdr, VictimTgid: e.VictimTGID, VictimCgroupId: e.VictimCgroupID}
		putStr(r.VictimComm[:], e.VictimComm)
		for i, m := range e.Memcgs {
			if i == len(r.MemcgId) {
				break
			}
			r.Flags |= uint32(PodchronOomFlagsOOM_F_MEMCG)
			r.MemcgId[i], r.MemcgLevel[i], r.MemcgOom[i] = m.ID, m.Level, m.OOMs
			r.MemcgCount = uint32(i + 1)
		}
		return bytesOf(&r)
	case *kernel.CgroupEvent:
		r := PodchronCgroupEvent{Hdr: hdr, Id: e.ID, Level: e.Level, HierarchyId: e.HierarchyID}
		putStr(r.Path[:], e.Path)
		return bytesOf(&r)
	}
	return nil
}

func putStr(dst []int8, s string) {
	for i := 0; i < len(s) && i < len(dst)-1; i++ {
		dst[i] = int8(s[i])
	}
}

func bytesOf[T any](v *T) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))...)
}

// putBytes copies s into dst, NULs included, and returns how many bytes fit.
func putBytes(dst []int8, s string) int {
	n := min(len(s), len(dst))
	for i := range n {
		dst[i] = int8(s[i])
	}
	return n
}
