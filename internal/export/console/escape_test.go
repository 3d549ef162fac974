package console

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// hostile is text a pod controls, with every kind of byte that acts on a
// terminal: ESC[2J (clear screen), CR, BEL, a C1 control (CSI, U+009B),
// DEL and invalid UTF-8.
const hostile = "x\x1b[2J\r\a\u009b31m\x7f\xff"

// noControls fails if out holds a byte a terminal acts on: a C0 control
// other than the line feed ending a line, DEL, or a C1 control.
func noControls(t *testing.T, what string, out []byte) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			t.Errorf("%s: invalid UTF-8 at %d:\n%s", what, i, out)
			return
		case r < 0x20 && r != '\n', r == 0x7f, r >= 0x80 && r < 0xa0:
			t.Errorf("%s: control %U at %d:\n%q", what, r, i, out)
			return
		}
		i += n
	}
}

// hostileSpans: a pod whose names, command line, comms, paths and
// Kubernetes Event carry hostile; and a second one whose root never comes
// (printed by Close as orphans).
func hostileSpans() []span.Span {
	S := span.String
	pod := newPod("6f1c2e3a-0b1d-4c5e-8f90-a1b2c3d4e5f6", hostile, "web-"+hostile, "node-"+hostile)
	ctr := S(names.K8sContainerName, "app"+hostile)
	args := span.Strings(names.ProcessCommandArgs, "/bin/"+hostile, "-c", hostile)
	run := pod.span("container/app/0/run", "root", names.SpanContainerRun, 1, 2, span.StatusError, ctr, args,
		S(names.OOMVictimComm, hostile), S(names.SignalSenderComm, hostile), S(names.SignalSenderKind, "user"),
		S(names.CNIIfName, hostile), S(names.CNINetNS, "/var/run/netns/"+hostile),
		S("process.executable.path", "/bin/"+hostile), S("podchron.cgroup.path", "/kubepods/"+hostile),
		S(hostile, "key"))
	run.StatusMessage = "exit: " + hostile
	run.Events = []span.SpanEvent{ev("signal "+hostile, 1.5, S(names.SignalName, hostile), S(names.Message, hostile))}
	cni := pod.span("startup/sandbox/cni/x", "startup", "cni.ADD "+hostile, 0.1, 0.2, span.StatusOK,
		S(names.CNIPlugin, hostile), S(names.CNICommand, "ADD"), args)
	startup := pod.span("startup", "root", names.SpanPodStartup, 0, 0.5, span.StatusOK)
	root := pod.span("root", "", "pod "+hostile, 0, 3, span.StatusError, S(names.Degraded, hostile))
	root.StatusMessage = hostile
	root.Events = []span.SpanEvent{ev("k8s."+hostile, 2.5, S(names.K8sEventReason, hostile), S(names.Message, "Back-off "+hostile))}
	orphan := newPod("0c9d8e7f-1111-2222-3333-444455556666", "ns"+hostile, hostile, hostile)
	lone := orphan.span("container/c/0/run", "root", names.SpanContainerRun, 0, 1, span.StatusUnset, ctr, args)
	return []span.Span{cni, startup, run, root, lone}
}

// The timeline reaches an operator's terminal: everything a pod wrote is
// shown, escaped; no control byte gets through.
func TestTextEscapesTenantText(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var buf bytes.Buffer
		p := New(&buf, Config{Format: FormatText, Verbose: verbose})
		for _, s := range hostileSpans() {
			p.Emit(s)
		}
		_ = p.Close()
		out := buf.Bytes()
		noControls(t, "text", out)
		if n := strings.Count(string(out), `x\x1b[2J\r\a\u009b31m\x7f\xff`); n < 10 {
			t.Errorf("verbose=%v: the escaped text is shown %d times, want at least 10:\n%s", verbose, n, out)
		}
		if verbose && !strings.Contains(string(out), `message="Back-off x\x1b[2J\r\a\u009b31m\x7f\xff"`) {
			t.Errorf("the Kubernetes Event message is missing:\n%s", out)
		}
	}
}

// JSON lines escape the C0 controls (encoding/json), DEL and the C1
// controls (redact.JSONControls), and read back as what the pod wrote
// (invalid UTF-8 replaced).
func TestJSONEscapesTenantText(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, Config{Format: FormatJSON})
	for _, s := range hostileSpans() {
		p.Emit(s)
	}
	noControls(t, "json", buf.Bytes())
	want := strings.ToValidUTF8(hostile, "\uFFFD")
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var js jsonSpan
		if err := dec.Decode(&js); err != nil {
			t.Fatal(err)
		}
		if js.Name == "pod "+want && js.StatusMessage != want {
			t.Errorf("root status message reads back as %q, want %q", js.StatusMessage, want)
		}
	}
}
