package kernel

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostile is text a pod controls, with every kind of byte that acts on a
// terminal: ESC[2J (clear screen), CR, BEL, a C1 control (CSI, U+009B),
// DEL and invalid UTF-8.
const hostile = "x\x1b[2J\r\a\u009b31m\x7f\xff"

// noControls fails if out holds a byte a terminal acts on: a C0 control
// other than the line feed ending a line, DEL, or a C1 control.
func noControls(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			t.Errorf("%s: invalid UTF-8 at %d: %q", what, i, out)
			return
		case r < 0x20 && r != '\n', r == 0x7f, r >= 0x80 && r < 0xa0:
			t.Errorf("%s: control %U at %d: %q", what, r, i, out)
			return
		}
		i += n
	}
}

func hostileEvents() []Event {
	h := func(t EventType) Header {
		return Header{Type: t, Time: time.Unix(1, 0), TGID: 7, Comm: hostile}
	}
	return []Event{
		&ExecEvent{Header: h(EventExec), Filename: "/bin/" + hostile, Args: []string{hostile, "-c", hostile},
			CNI: &CNIRun{Command: hostile, ContainerID: hostile, IfName: hostile, NetNS: hostile,
				PodNamespace: hostile, PodName: hostile, PodUID: hostile}},
		&SignalEvent{Header: h(EventSignalGenerate), Signal: 15, TargetComm: hostile},
		&OOMEvent{Header: h(EventOOMKill), VictimComm: hostile},
		&CgroupEvent{Header: h(EventCgroupMkdir), Path: "/kubepods/" + hostile},
	}
}

// `tracer events` prints Format's lines to a terminal: what the pod wrote
// is shown, escaped.
func TestFormatEscapesTenantText(t *testing.T) {
	for _, ev := range hostileEvents() {
		out := Format(ev)
		noControls(t, ev.Hdr().Type.String(), out)
		if !strings.Contains(out, `x\x1b[2J\r\a\u009b31m\x7f\xff`) {
			t.Errorf("%s: the escaped text is missing: %s", ev.Hdr().Type, out)
		}
	}
}

// `tracer events --output json`: encoding/json escapes the C0 controls and
// replaces invalid UTF-8, the encoder escapes DEL and the C1 controls.
func TestJSONEscapesTenantText(t *testing.T) {
	var b bytes.Buffer
	enc := NewJSONEncoder(&b)
	for _, ev := range hostileEvents() {
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	}
	noControls(t, "json", b.String())
	dec := json.NewDecoder(&b)
	for dec.More() {
		var m struct {
			Data struct{ Comm string }
		}
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if want := strings.ToValidUTF8(hostile, "\uFFFD"); m.Data.Comm != want {
			t.Errorf("comm reads back as %q, want %q", m.Data.Comm, want)
		}
	}
}
