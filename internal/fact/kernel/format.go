package kernel

import (
	"syscall"

	"encoding/json"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"
)

// Format renders an event as one readable line.
func Format(ev Event) string {
	h := ev.Hdr()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-14s pid=%-7d ppid=%-7d comm=%-15s cg=%-6d ",
		h.Time.Format("15:04:05.000000"), h.Type, h.TGID, h.PPID, h.Comm, h.CgroupID)
	switch e := ev.(type) {
	case *ExecEvent:
		fmt.Fprintf(&b, "%s %q", e.Filename, e.Args)
		if e.ArgsTruncated {
			b.WriteString("…")
		}
		if c := e.CNI; c != nil {
			fmt.Fprintf(&b, " CNI %s container=%s ifname=%s netns=%s", c.Command, short(c.ContainerID), c.IfName, c.NetNS)
			if c.PodName != "" {
				fmt.Fprintf(&b, " pod=%s/%s uid=%s", c.PodNamespace, c.PodName, c.PodUID)
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
			SignalName(e.Signal), e.TargetTGID, e.TargetComm, e.TargetCgroupID, SenderKind(e.Code), e.Result, e.Disposition)
		if e.TargetNSInit {
			b.WriteString(" target=pidns-init")
		}
	case *SignalDeliverEvent:
		fmt.Fprintf(&b, "%s delivered, disposition=%s", SignalName(e.Signal), e.Disposition)
	case *OOMEvent:
		fmt.Fprintf(&b, "OOM victim pid=%d comm=%s", e.VictimTGID, e.VictimComm)
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
		fmt.Fprintf(&b, "id=%d level=%d %s", e.ID, e.Level, e.Path)
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
// type as a string field.
type JSONEncoder struct{ enc *json.Encoder }

// NewJSONEncoder writes to w.
func NewJSONEncoder(w io.Writer) *JSONEncoder { return &JSONEncoder{enc: json.NewEncoder(w)} }

// Encode writes ev.
func (j *JSONEncoder) Encode(ev Event) error {
	return j.enc.Encode(struct {
		Event  string `json:"event"`
		Event2 Event  `json:"data"`
	}{ev.Hdr().Type.String(), ev})
}
