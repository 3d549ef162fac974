package probe

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unsafe"
)

// ErrShortEvent means a record was smaller than its type's struct.
var ErrShortEvent = errors.New("short event record")

// ErrUnknownEvent means a record carried an event type this build does not know.
var ErrUnknownEvent = errors.New("unknown event type")

// Decoder turns raw ring buffer records into typed events. It uses the
// structs bpf2go generated from bpf/include/events.h, read in place: no
// reflection, one allocation per string field.
type Decoder struct {
	Clock *Clock
	// comms interns command names: few distinct values, one on every event.
	comms map[string]string
}

// NewDecoder returns a decoder stamping events with wall-clock times.
func NewDecoder() *Decoder { return &Decoder{Clock: NewClock()} }

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

func (d *Decoder) header(h *podchronEventHeader) Header {
	return Header{
		Type:     EventType(h.Type),
		Origin:   Origin(h.Origin),
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
func (d *Decoder) Decode(raw []byte) (Event, error) {
	h, err := view[podchronEventHeader](raw)
	if err != nil {
		return nil, err
	}
	switch EventType(h.Type) {
	case EventExec:
		return d.exec(raw)
	case EventFork:
		r, err := view[podchronForkEvent](raw)
		if err != nil {
			return nil, err
		}
		return &ForkEvent{Header: d.header(&r.Hdr), ChildTGID: r.ChildTgid, ChildPID: r.ChildPid}, nil
	case EventExit:
		r, err := view[podchronExitEvent](raw)
		if err != nil {
			return nil, err
		}
		st := syscall.WaitStatus(r.ExitCode)
		e := &ExitEvent{
			Header:     d.header(&r.Hdr),
			RawStatus:  r.ExitCode,
			Start:      d.Clock.Wall(r.StartNs),
			CoreDumped: r.ExitCode&0x80 != 0,
		}
		if sig := r.ExitCode & 0x7f; sig != 0 {
			e.Signal = syscall.Signal(sig)
		} else {
			e.ExitCode = st.ExitStatus()
		}
		return e, nil
	case EventSignalGenerate:
		r, err := view[podchronSignalEvent](raw)
		if err != nil {
			return nil, err
		}
		return &SignalEvent{
			Header:         d.header(&r.Hdr),
			Signal:         syscall.Signal(r.Sig),
			Code:           r.Code,
			Result:         SignalResult(r.Result),
			Group:          r.Group != 0,
			TargetTGID:     r.TargetTgid,
			TargetPID:      r.TargetPid,
			TargetCgroupID: r.TargetCgroupId,
			TargetComm:     cstr(r.TargetComm[:]),
			Disposition:    Disposition(r.Disposition),
			TargetNSInit:   r.TargetFlags&1 != 0,
			SenderWatched:  r.TargetFlags&2 != 0,
		}, nil
	case EventSignalDeliver:
		r, err := view[podchronSignalDeliverEvent](raw)
		if err != nil {
			return nil, err
		}
		return &SignalDeliverEvent{
			Header:      d.header(&r.Hdr),
			Signal:      syscall.Signal(r.Sig),
			Code:        r.Code,
			Disposition: Disposition(r.Disposition),
			SAFlags:     r.SaFlags,
		}, nil
	case EventOOMKill:
		r, err := view[podchronOomEvent](raw)
		if err != nil {
			return nil, err
		}
		e := &OOMEvent{
			Header:         d.header(&r.Hdr),
			VictimTGID:     r.VictimTgid,
			VictimKnown:    r.Flags&1 != 0,
			VictimCgroupID: r.VictimCgroupId,
			VictimComm:     cstr(r.VictimComm[:]),
			HasRSS:         r.Flags&2 != 0,
			TotalVMKB:      r.TotalVmKb,
			AnonRSSKB:      r.AnonRssKb,
			FileRSSKB:      r.FileRssKb,
			ShmemRSSKB:     r.ShmemRssKb,
			OOMScoreAdj:    r.OomScoreAdj,
		}
		for i := 0; r.Flags&4 != 0 && i < int(r.MemcgCount) && i < len(r.MemcgId); i++ {
			e.Memcgs = append(e.Memcgs, MemcgOOMs{ID: r.MemcgId[i], Level: r.MemcgLevel[i], OOMs: r.MemcgOom[i]})
		}
		return e, nil
	case EventCgroupMkdir, EventCgroupRmdir:
		r, err := view[podchronCgroupEvent](raw)
		if err != nil {
			return nil, err
		}
		return &CgroupEvent{
			Header:      d.header(&r.Hdr),
			ID:          r.Id,
			Level:       r.Level,
			HierarchyID: r.HierarchyId,
			Path:        cstr(r.Path[:]),
		}, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownEvent, h.Type)
}

const (
	execFlagCNI           = 1 << 0
	execFlagArgsTruncated = 1 << 1
)

func (d *Decoder) exec(raw []byte) (Event, error) {
	r, err := view[podchronExecEvent](raw)
	if err != nil {
		return nil, err
	}
	e := &ExecEvent{
		Header:        d.header(&r.Hdr),
		Filename:      cstr(r.Filename[:]),
		ArgsTruncated: r.Flags&execFlagArgsTruncated != 0,
	}
	n := min(int(r.ArgsSize), len(r.Args))
	e.Args = splitArgs(cbytesN(r.Args[:n]))
	if r.Flags&execFlagCNI != 0 {
		c, err := view[podchronCniInfo](raw[unsafe.Sizeof(*r):])
		if err != nil {
			return nil, fmt.Errorf("exec with CNI flag: %w", err)
		}
		e.CNI = newCNIRun(c)
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

func newCNIRun(c *podchronCniInfo) *CNIRun {
	r := &CNIRun{
		Command:     cstr(c.Command[:]),
		ContainerID: cstr(c.ContainerId[:]),
		IfName:      cstr(c.Ifname[:]),
		NetNS:       cstr(c.Netns[:]),
		Args:        cstr(c.Args[:]),
	}
	r.parseArgs()
	return r
}

// parseArgs reads the Kubernetes keys out of CNI_ARGS ("K1=V1;K2=V2").
func (r *CNIRun) parseArgs() {
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
