package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/redact"
)

// Format renders an event as one readable line. The text the traced
// processes control (comm, file name, arguments, cgroup path, CNI
// environment) has its control bytes and invalid UTF-8 escaped: the line is
// printed to an operator's terminal.
func Format(ev Event) string {
	p := redact.Printable
	h := ev.Hdr()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-14s pid=%-7d ppid=%-7d comm=%-15s cg=%-6d ",
		h.Time.Format("15:04:05.000000"), h.Type, h.TGID, h.PPID, p(h.Comm), h.CgroupID)
	switch e := ev.(type) {
	case *ExecEvent:
		fmt.Fprintf(&b, "%s %q", p(e.Filename), e.Args)
		if e.ArgsTruncated {
			b.WriteString("…")
		}
		if c := e.CNI; c != nil {
			fmt.Fprintf(&b, " CNI %s container=%s ifname=%s netns=%s", p(c.Command), p(short(c.ContainerID)), p(c.IfName), p(c.NetNS))
			if c.PodName != "" {
				fmt.Fprintf(&b, " pod=%s/%s uid=%s", p(c.PodNamespace), p(c.PodName), p(c.PodUID))
			}
		}
	case *ForkEvent:
		fmt.Fprintf(&b, "child=%d", e.ChildTGID)
	case *ExitEvent:
		if e.Signal != 0 {
			fmt.Fprintf(&b, "killed by %s", SignalName(e.Signal))
			if e.CoreDumped {
				b.WriteString(" (core dumped)")
			}
		} else {
			fmt.Fprintf(&b, "exit code %d", e.ExitCode)
		}
	case *SignalEvent:
		fmt.Fprintf(&b, "%s -> pid=%d comm=%s cg=%d code=%s result=%s disposition=%s",
			SignalName(e.Signal), e.TargetTGID, p(e.TargetComm), e.TargetCgroupID, SenderKind(e.Code), e.Result, e.Disposition)
		if e.TargetNSInit {
			b.WriteString(" target=pidns-init")
		}
	case *SignalDeliverEvent:
		fmt.Fprintf(&b, "%s delivered, disposition=%s", SignalName(e.Signal), e.Disposition)
	case *OOMEvent:
		fmt.Fprintf(&b, "OOM victim pid=%d comm=%s", e.VictimTGID, p(e.VictimComm))
		if e.VictimKnown {
			fmt.Fprintf(&b, " cg=%d", e.VictimCgroupID)
		}
		if e.HasRSS {
			fmt.Fprintf(&b, " anon_rss=%dkB file_rss=%dkB shmem_rss=%dkB total_vm=%dkB oom_score_adj=%d",
				e.AnonRSSKB, e.FileRSSKB, e.ShmemRSSKB, e.TotalVMKB, e.OOMScoreAdj)
		}
		for _, m := range e.Memcgs {
			fmt.Fprintf(&b, " memcg[%d]=%d:oom=%d", m.Level, m.ID, m.OOMs)
		}
	case *CgroupEvent:
		fmt.Fprintf(&b, "id=%d level=%d %s", e.ID, e.Level, p(e.Path))
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// SignalName returns "SIGTERM" style names.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// JSONEncoder writes one JSON object per event and line, with the event
// type as a string field. DEL and the C1 controls, which encoding/json
// leaves raw, are escaped too (redact.JSONControls): the lines may reach a
// terminal.
type JSONEncoder struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// NewJSONEncoder writes to w.
func NewJSONEncoder(w io.Writer) *JSONEncoder {
	j := &JSONEncoder{w: w}
	j.enc = json.NewEncoder(&j.buf)
	return j
}

// Encode writes ev.
func (j *JSONEncoder) Encode(ev Event) error {
	j.buf.Reset()
	if err := j.enc.Encode(struct {
		Event  string `json:"event"`
		Event2 Event  `json:"data"`
	}{ev.Hdr().Type.String(), ev}); err != nil {
		return err
	}
	_, err := j.w.Write(redact.JSONControls(j.buf.Bytes()))
	return err
}
