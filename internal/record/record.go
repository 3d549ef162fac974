// Package record writes and reads the correlator's input stream as JSON
// lines, so a real run can be replayed offline through the same model
// (`tracer record FILE`, `tracer replay FILE`) and kept as a golden test input.
package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/redact"

	"github.com/podchron/podchron/internal/fact/cri"
)

// Version is the format version written in each file's header line.
// Version 2 added progress lines (fact.Progress); version 1 files have
// none and are still read. Version 3 writes the runtime's sandboxes and
// containers with their JSON tags (snake_case, like every other recorded
// type); versions 1 and 2 wrote their Go field names, which legacy.go
// still reads.
const Version = 3

// oldestVersion is the oldest format version this build reads.
const oldestVersion = 1

type line struct {
	Version int             `json:"v,omitempty"`
	Time    time.Time       `json:"t"`
	Kind    string          `json:"k"`
	Type    string          `json:"type,omitempty"` // kernel event type
	Data    json.RawMessage `json:"d,omitempty"`
	// Backlog: fact.Input.Backlog (the tracer's own input, made while
	// the sources' waited in the queue). Older files have none.
	Backlog bool `json:"backlog,omitempty"`
}

// runtimeEvent is cri.Event with the gap's error as text (an error does
// not marshal): its gap shadows the event's.
type runtimeEvent struct {
	cri.Event
	Gap *gap `json:"gap,omitempty"`
}

type gap struct {
	cri.Gap
	Err string `json:"err,omitempty"`
}

// newRuntimeEvent is e as recorded.
func newRuntimeEvent(e *cri.Event) runtimeEvent {
	re := runtimeEvent{Event: *e}
	re.Event.Gap = nil
	if e.Gap != nil {
		re.Gap = &gap{Gap: *e.Gap}
		re.Gap.Gap.Err = nil
		if e.Gap.Err != nil {
			re.Gap.Err = e.Gap.Err.Error()
		}
	}
	return re
}

// event is the recorded event read back.
func (re runtimeEvent) event() *cri.Event {
	e := re.Event
	if re.Gap != nil {
		g := re.Gap.Gap
		if re.Gap.Err != "" {
			g.Err = errors.New(re.Gap.Err)
		}
		e.Gap = &g
	}
	return &e
}

// Writer appends inputs to a stream. Safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
	n   int
	// Args is what of the command lines is written (redact.Redacted
	// unless SetArgs says otherwise).
	args redact.Policy
}

// SetArgs sets what of the command lines in the stream is written: the
// execs' and processes' argv, the runtime's configured commands, the pod
// spec's exec hooks and probes.
func (w *Writer) SetArgs(p redact.Policy) { w.args = p }

// NewWriter writes the header line.
func NewWriter(w io.Writer) (*Writer, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	rw := &Writer{w: bw, enc: json.NewEncoder(bw)}
	if err := rw.enc.Encode(line{Version: Version, Kind: "header", Time: time.Unix(0, 0).UTC()}); err != nil {
		return nil, fmt.Errorf("write record header: %w", err)
	}
	return rw, nil
}

// Write appends one input.
func (w *Writer) Write(in fact.Input) error {
	l, err := encode(RedactInput(in, w.args))
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if err := w.enc.Encode(l); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	return nil
}

// Flush writes buffered lines out.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Flush()
}

// Count is how many inputs were written.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func encode(in fact.Input) (line, error) {
	l := line{Time: in.Time, Backlog: in.Backlog}
	var v any
	switch {
	case in.Kernel != nil:
		l.Kind, l.Type, v = "kernel", in.Kernel.Hdr().Type.String(), in.Kernel
	case in.Runtime != nil:
		l.Kind, v = "runtime", newRuntimeEvent(in.Runtime)
	case in.Pod != nil:
		l.Kind, v = "pod", in.Pod
	case in.Event != nil:
		l.Kind, v = "event", in.Event
	case in.Endpoint != nil:
		l.Kind, v = "endpoint", in.Endpoint
	case in.API != nil:
		l.Kind, v = "api", in.API
	case in.Cgroup != nil:
		l.Kind, v = "cgroup", in.Cgroup
	case in.Proc != nil:
		l.Kind, v = "proc", in.Proc
	case in.Losses != nil:
		l.Kind, v = "losses", in.Losses
	case in.Start != nil:
		l.Kind, v = "start", in.Start
	case in.Progress != nil:
		l.Kind, v = "progress", in.Progress
	case in.Tick:
		l.Kind = "tick"
	default:
		return l, errors.New("record: empty input")
	}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return l, fmt.Errorf("record %s: %w", l.Kind, err)
		}
		l.Data = b
	}
	return l, nil
}

// Reader reads a recorded stream.
type Reader struct {
	sc      *bufio.Scanner
	line    int
	version int // the header's format version
	// unterminated: the line just scanned had no newline (the end of a
	// file cut short).
	unterminated bool
}

// ErrTornLine is the error (wrapped in a *TornLineError) for a last line
// cut short, as a crash while recording leaves it: no newline at the end
// of the file, and not a whole line. What comes before it is intact.
var ErrTornLine = errors.New("torn last line")

// TornLineError names the torn last line of a record file.
type TornLineError struct {
	Line  int // 1-based
	Bytes int // what of it there is
}

func (e *TornLineError) Error() string {
	return fmt.Sprintf("record line %d: torn last line (%d bytes, no newline: the recording was cut short)", e.Line, e.Bytes)
}

// Unwrap makes errors.Is(err, ErrTornLine) true.
func (e *TornLineError) Unwrap() error { return ErrTornLine }

// NewReader checks the header line.
func NewReader(r io.Reader) (*Reader, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	rd := &Reader{sc: sc}
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if tok != nil {
			rd.unterminated = data[adv-1] != '\n'
		}
		return adv, tok, err
	})
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read record header: %w", err)
		}
		return nil, errors.New("record: empty file")
	}
	rd.line = 1
	var h line
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Kind != "header" {
		return nil, fmt.Errorf("record: line 1 is not a podchron record header: %q", truncate(sc.Text()))
	}
	if h.Version < oldestVersion || h.Version > Version {
		return nil, fmt.Errorf("record: format version %d, this build reads %d to %d", h.Version, oldestVersion, Version)
	}
	rd.version = h.Version
	return rd, nil
}

// Next returns the next input, io.EOF at the end. A last line cut short
// (no newline, not whole JSON) is a *TornLineError (errors.Is ErrTornLine):
// every input before it has been returned, and the next call returns
// io.EOF.
func (r *Reader) Next() (fact.Input, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return fact.Input{}, fmt.Errorf("read record line %d: %w", r.line+1, err)
		}
		return fact.Input{}, io.EOF
	}
	r.line++
	var l line
	if err := json.Unmarshal(r.sc.Bytes(), &l); err != nil {
		if r.unterminated && !json.Valid(r.sc.Bytes()) {
			return fact.Input{}, &TornLineError{Line: r.line, Bytes: len(r.sc.Bytes())}
		}
		return fact.Input{}, fmt.Errorf("record line %d: %w", r.line, err)
	}
	in, err := decode(l, r.version)
	if err != nil {
		return fact.Input{}, fmt.Errorf("record line %d: %w", r.line, err)
	}
	return in, nil
}

// ReadAll reads a whole recorded stream.
func ReadAll(r io.Reader) ([]fact.Input, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	var out []fact.Input
	for {
		in, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, in)
	}
}

// decode reads a line of a file of the given format version.
func decode(l line, version int) (fact.Input, error) {
	in := fact.Input{Time: l.Time, Backlog: l.Backlog}
	var target any
	switch l.Kind {
	case "kernel":
		ev, err := newKernelEvent(l.Type)
		if err != nil {
			return in, err
		}
		target, in.Kernel = ev, ev
	case "runtime":
		re, err := decodeRuntime(l.Data, version)
		if err != nil {
			return in, fmt.Errorf("runtime event: %w", err)
		}
		in.Runtime = re.event()
		return in, nil
	case "pod":
		in.Pod = &fact.PodInfo{}
		target = in.Pod
	case "event":
		in.Event = &fact.K8sEvent{}
		target = in.Event
	case "endpoint":
		in.Endpoint = &fact.EndpointChange{}
		target = in.Endpoint
	case "api":
		in.API = &fact.APIStatus{}
		target = in.API
	case "cgroup":
		in.Cgroup = &fact.CgroupSeen{}
		target = in.Cgroup
	case "proc":
		in.Proc = &fact.ProcSeen{}
		target = in.Proc
	case "losses":
		in.Losses = &fact.Losses{}
		target = in.Losses
	case "start":
		in.Start = &fact.Start{}
		target = in.Start
	case "progress":
		in.Progress = &fact.Progress{}
		target = in.Progress
	case "tick":
		in.Tick = true
		return in, nil
	default:
		return in, fmt.Errorf("unknown input kind %q", l.Kind)
	}
	if err := json.Unmarshal(l.Data, target); err != nil {
		return in, fmt.Errorf("%s: %w", l.Kind, err)
	}
	return in, nil
}

func newKernelEvent(typ string) (kernel.Event, error) {
	switch typ {
	case kernel.EventExec.String():
		return &kernel.ExecEvent{}, nil
	case kernel.EventFork.String():
		return &kernel.ForkEvent{}, nil
	case kernel.EventExit.String():
		return &kernel.ExitEvent{}, nil
	case kernel.EventSignalGenerate.String():
		return &kernel.SignalEvent{}, nil
	case kernel.EventSignalDeliver.String():
		return &kernel.SignalDeliverEvent{}, nil
	case kernel.EventOOMKill.String():
		return &kernel.OOMEvent{}, nil
	case kernel.EventCgroupMkdir.String(), kernel.EventCgroupRmdir.String():
		return &kernel.CgroupEvent{}, nil
	}
	return nil, fmt.Errorf("unknown kernel event type %q", typ)
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// RedactInput returns in with its command lines as the policy keeps them
// (copies: in is not modified). Every command line an input can carry goes
// through the same policy, so a replay still matches the execs against the
// configured commands.
func RedactInput(in fact.Input, p redact.Policy) fact.Input {
	if p == redact.Full {
		return in
	}
	switch {
	case in.Kernel != nil:
		if e, ok := in.Kernel.(*kernel.ExecEvent); ok && len(e.Args) > 0 {
			c := *e
			c.Args = p.Args(e.Args)
			in.Kernel = &c
		}
	case in.Proc != nil && len(in.Proc.Args) > 0:
		c := *in.Proc
		c.Args = p.Args(in.Proc.Args)
		in.Proc = &c
	case in.Runtime != nil && in.Runtime.Container != nil && len(in.Runtime.Container.Args) > 0:
		e, ct := *in.Runtime, *in.Runtime.Container
		ct.Args = p.Args(ct.Args)
		e.Container = &ct
		in.Runtime = &e
	case in.Pod != nil:
		info := *in.Pod
		info.InitContainers = redactSpecs(info.InitContainers, p)
		info.Containers = redactSpecs(info.Containers, p)
		in.Pod = &info
	}
	return in
}

func redactSpecs(specs []fact.ContainerSpec, p redact.Policy) []fact.ContainerSpec {
	if len(specs) == 0 {
		return specs
	}
	out := make([]fact.ContainerSpec, len(specs))
	for i, s := range specs {
		for _, h := range []**fact.Handler{&s.PostStart, &s.PreStop} {
			if *h != nil && len((*h).Exec) > 0 {
				c := **h
				c.Exec = p.Args(c.Exec)
				*h = &c
			}
		}
		for _, pr := range []**fact.ProbeSpec{&s.Startup, &s.Liveness, &s.Readiness} {
			if *pr != nil && len((*pr).Exec) > 0 {
				c := **pr
				c.Exec = p.Args(c.Exec)
				*pr = &c
			}
		}
		out[i] = s
	}
	return out
}
