// Package event decodes the eBPF programs' ring-buffer records into the
// kernel facts of internal/fact/kernel; it holds the bpf2go bindings
// generated from bpf/ (committed, with every C enum) and an encoder for
// tests. It builds on any OS; loading the programs is internal/probe's
// (Linux).
package event

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/podchron/podchron/internal/fact/kernel"
)

// ErrShortEvent means a record was smaller than its type's struct.
var ErrShortEvent = errors.New("short event record")

// ErrUnknownEvent means a record carried an event type this build does not know.
var ErrUnknownEvent = errors.New("unknown event type")

// Decoder turns raw ring buffer records into typed events. It uses the
// structs bpf2go generated from bpf/include/events.h, read in place: no
// reflection, one allocation per string field.
type Decoder struct {
	Clock Clock
	// comms interns command names: few distinct values, one on every event.
	comms map[string]string
}

// Clock turns the kernel's CLOCK_BOOTTIME stamps into wall-clock times
// (internal/probe's Clock on Linux).
type Clock interface {
	Wall(bootNS uint64) time.Time
}

// NewDecoder returns a decoder stamping events with clock's times.
func NewDecoder(clock Clock) *Decoder { return &Decoder{Clock: clock} }

func view[T any](raw []byte) (*T, error) {
	var zero T
	if len(raw) < int(unsafe.Sizeof(zero)) {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrShortEvent, len(raw), unsafe.Sizeof(zero))
	}
	return (*T)(unsafe.Pointer(unsafe.SliceData(raw))), nil
}

func cbytes(a []int8) []byte {
	if len(a) == 0 {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

func cstr(a []int8) string { return string(cbytes(a)) }

func (d *Decoder) header(h *PodchronEventHeader) kernel.Header {
	return kernel.Header{
		Type:     kernel.EventType(h.Type),
		Origin:   kernel.Origin(h.Origin),
		Time:     d.Clock.Wall(h.KtimeNs),
		BootNS:   h.KtimeNs,
		CgroupID: h.CgroupId,
		TGID:     h.Tgid,
		PID:      h.Pid,
		PPID:     h.Ppid,
		Comm:     d.comm(h.Comm[:]),
	}
}

func (d *Decoder) comm(a []int8) string {
	b := cbytes(a)
	if s, ok := d.comms[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if d.comms == nil || len(d.comms) >= 4096 {
		d.comms = make(map[string]string, 256)
	}
	d.comms[s] = s
	return s
}

// Decode decodes one ring buffer record.
func (d *Decoder) Decode(raw []byte) (kernel.Event, error) {
	h, err := view[PodchronEventHeader](raw)
	if err != nil {
		return nil, err
	}
	if t := uint64(h.Type); t < uint64(len(decoders)) && decoders[t] != nil {
		return decoders[t](d, raw)
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownEvent, h.Type)
}

// decodeFunc decodes one record of a known event type.
type decodeFunc func(d *Decoder, raw []byte) (kernel.Event, error)

// decoders are the decoders by event type.
var decoders = [...]decodeFunc{
	kernel.EventExec:           (*Decoder).exec,
	kernel.EventFork:           decodeAs((*Decoder).fork),
	kernel.EventExit:           decodeAs((*Decoder).exit),
	kernel.EventSignalGenerate: decodeAs((*Decoder).signal),
	kernel.EventSignalDeliver:  decodeAs((*Decoder).signalDeliver),
	kernel.EventOOMKill:        decodeAs((*Decoder).oom),
	kernel.EventCgroupMkdir:    decodeAs((*Decoder).cgroup),
	kernel.EventCgroupRmdir:    decodeAs((*Decoder).cgroup),
}

// decodeAs makes a decodeFunc of a conversion from a record of type T, read
// in place.
func decodeAs[T any](conv func(*Decoder, *T) kernel.Event) decodeFunc {
	return func(d *Decoder, raw []byte) (kernel.Event, error) {
		r, err := view[T](raw)
		if err != nil {
			return nil, err
		}
		return conv(d, r), nil
	}
}

func (d *Decoder) fork(r *PodchronForkEvent) kernel.Event {
	return &kernel.ForkEvent{Header: d.header(&r.Hdr), ChildTGID: r.ChildTgid, ChildPID: r.ChildPid}
}

func (d *Decoder) exit(r *PodchronExitEvent) kernel.Event {
	st := syscall.WaitStatus(r.ExitCode)
	e := &kernel.ExitEvent{
		Header:     d.header(&r.Hdr),
		RawStatus:  r.ExitCode,
		Start:      d.Clock.Wall(r.StartNs),
		CoreDumped: r.ExitCode&0x80 != 0,
		NSInit:     has(r.Flags, PodchronExitFlagsEXIT_F_NS_INIT),
	}
	if sig := r.ExitCode & 0x7f; sig != 0 {
		e.Signal = syscall.Signal(sig)
	} else {
		e.ExitCode = st.ExitStatus()
	}
	return e
}

func (d *Decoder) signal(r *PodchronSignalEvent) kernel.Event {
	return &kernel.SignalEvent{
		Header:         d.header(&r.Hdr),
		Signal:         syscall.Signal(r.Sig),
		Code:           r.Code,
		Result:         kernel.SignalResult(r.Result),
		Group:          r.Group != 0,
		TargetTGID:     r.TargetTgid,
		TargetPID:      r.TargetPid,
		TargetCgroupID: r.TargetCgroupId,
		TargetComm:     cstr(r.TargetComm[:]),
		Disposition:    kernel.Disposition(r.Disposition),
		TargetNSInit:   has(r.TargetFlags, PodchronSignalTargetFlagsSIGNAL_TARGET_NS_INIT),
		SenderWatched:  has(r.TargetFlags, PodchronSignalTargetFlagsSIGNAL_SENDER_WATCHED),
		SenderOutside:  has(r.TargetFlags, PodchronSignalTargetFlagsSIGNAL_SENDER_OUTSIDE),
	}
}

func (d *Decoder) signalDeliver(r *PodchronSignalDeliverEvent) kernel.Event {
	return &kernel.SignalDeliverEvent{
		Header:      d.header(&r.Hdr),
		Signal:      syscall.Signal(r.Sig),
		Code:        r.Code,
		Disposition: kernel.Disposition(r.Disposition),
		SAFlags:     r.SaFlags,
	}
}

func (d *Decoder) oom(r *PodchronOomEvent) kernel.Event {
	e := &kernel.OOMEvent{
		Header:         d.header(&r.Hdr),
		VictimTGID:     r.VictimTgid,
		VictimKnown:    has(r.Flags, PodchronOomFlagsOOM_F_VICTIM_KNOWN),
		VictimCgroupID: r.VictimCgroupId,
		VictimComm:     cstr(r.VictimComm[:]),
		HasRSS:         has(r.Flags, PodchronOomFlagsOOM_F_RSS),
		TotalVMKB:      r.TotalVmKb,
		AnonRSSKB:      r.AnonRssKb,
		FileRSSKB:      r.FileRssKb,
		ShmemRSSKB:     r.ShmemRssKb,
		OOMScoreAdj:    r.OomScoreAdj,
	}
	for i := 0; has(r.Flags, PodchronOomFlagsOOM_F_MEMCG) && i < int(r.MemcgCount) && i < len(r.MemcgId); i++ {
		e.Memcgs = append(e.Memcgs, kernel.MemcgOOMs{ID: r.MemcgId[i], Level: r.MemcgLevel[i], OOMs: r.MemcgOom[i]})
	}
	return e
}

func (d *Decoder) cgroup(r *PodchronCgroupEvent) kernel.Event {
	return &kernel.CgroupEvent{
		Header:      d.header(&r.Hdr),
		ID:          r.Id,
		Level:       r.Level,
		HierarchyID: r.HierarchyId,
		Path:        cstr(r.Path[:]),
	}
}

func (d *Decoder) exec(raw []byte) (kernel.Event, error) {
	r, err := view[PodchronExecEvent](raw)
	if err != nil {
		return nil, err
	}
	e := &kernel.ExecEvent{
		Header:        d.header(&r.Hdr),
		Filename:      cstr(r.Filename[:]),
		ArgsTruncated: has(r.Flags, PodchronExecFlagsEXEC_F_ARGS_TRUNCATED),
	}
	n := min(int(r.ArgsSize), len(r.Args))
	e.Args = splitArgs(cbytesN(r.Args[:n]))
	if has(r.Flags, PodchronExecFlagsEXEC_F_CNI) {
		c, err := view[PodchronCniEnv](raw[unsafe.Sizeof(*r):])
		if err != nil {
			return nil, fmt.Errorf("exec with CNI flag: %w", err)
		}
		e.CNI = cniFromEnv(c)
	}
	return e, nil
}

// cbytesN views a fixed-size region without stopping at NUL bytes.
func cbytesN(a []int8) []byte {
	if len(a) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a))
}

func splitArgs(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	// One allocation for the backing string, then substrings of it.
	s := string(b)
	n := strings.Count(s, "\x00") + 1
	args := make([]string, 0, n)
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			return append(args, s)
		}
		args = append(args, s[:i])
		s = s[i+1:]
	}
}

// cniFromEnv picks the CNI_* variables out of a plugin's environment, or
// returns nil when CNI_COMMAND is not among them (a binary in a CNI
// directory run by hand). Nothing else of the environment is kept.
func cniFromEnv(c *PodchronCniEnv) *kernel.CNIRun {
	data := cbytesN(c.Data[:min(int(c.Size), len(c.Data))])
	r := &kernel.CNIRun{}
	if has(c.Flags, PodchronCniEnvFlagsCNI_ENV_F_SPLIT) && len(data) == len(c.Data) {
		// Two halves of a longer environment: the variables cut at either
		// half's edges are partial and skipped.
		half := len(data) / 2
		setCNIFromEnv(r, dropPartial(data[:half], false, true))
		setCNIFromEnv(r, dropPartial(data[half:], true, false))
	} else {
		setCNIFromEnv(r, data)
	}
	return cniDone(r)
}

// dropPartial removes a variable cut at the start (head) and one cut at the
// end (tail) of a window into an environment.
func dropPartial(b []byte, head, tail bool) []byte {
	if head {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	if tail && len(b) > 0 && b[len(b)-1] != 0 {
		i := bytes.LastIndexByte(b, 0)
		if i < 0 {
			return nil
		}
		b = b[:i+1]
	}
	return b
}

// setCNIFromEnv sets the fields named by the CNI_* variables of a
// NUL-separated environment.
func setCNIFromEnv(r *kernel.CNIRun, env []byte) {
	for v := range bytes.SplitSeq(env, []byte{0}) {
		rest, ok := bytes.CutPrefix(v, []byte("CNI_"))
		if !ok {
			continue
		}
		k, val, ok := bytes.Cut(rest, []byte("="))
		if !ok {
			continue
		}
		switch string(k) {
		case "COMMAND":
			r.Command = string(val)
		case "CONTAINERID":
			r.ContainerID = string(val)
		case "IFNAME":
			r.IfName = string(val)
		case "NETNS":
			r.NetNS = string(val)
		case "ARGS":
			r.Args = string(val)
		}
	}
}

func cniDone(r *kernel.CNIRun) *kernel.CNIRun {
	if r.Command == "" {
		return nil
	}
	parseCNIArgs(r)
	return r
}

// parseCNIArgs reads the Kubernetes keys out of CNI_ARGS ("K1=V1;K2=V2").
func parseCNIArgs(r *kernel.CNIRun) {
	for kv := range strings.SplitSeq(r.Args, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch k {
		case "K8S_POD_NAMESPACE":
			r.PodNamespace = v
		case "K8S_POD_NAME":
			r.PodName = v
		case "K8S_POD_UID":
			r.PodUID = v
		case "K8S_POD_INFRA_CONTAINER_ID":
			r.InfraContainerID = v
		}
	}
}

// has tells whether a record's flags field has a flag of the C enum.
func has[F ~uint32](flags uint32, f F) bool { return flags&uint32(f) != 0 }
