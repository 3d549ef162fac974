package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/redact"

	"github.com/podchron/podchron/internal/fact/cri"
)

func TestRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	grace := int64(3)
	del := t0.Add(5 * time.Second)
	hdr := kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, Time: t0, BootNS: 42, CgroupID: 7, TGID: 100, PID: 100, PPID: 1, Comm: "bridge"}
	inputs := []fact.Input{
		{Time: t0, Start: &fact.Start{At: t0, NodeName: "node-1"}},
		{Time: t0, Kernel: &kernel.ExecEvent{Header: hdr, Filename: "/opt/cni/bin/bridge", Args: []string{"bridge"},
			CNI: &kernel.CNIRun{Command: "ADD", ContainerID: "abc", PodUID: "u1"}}},
		{Time: t0, Kernel: &kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: t0, TGID: 100}, Signal: syscall.SIGKILL, RawStatus: 9}},
		{Time: t0, Kernel: &kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Time: t0, TGID: 5}, Signal: syscall.SIGTERM, Result: kernel.SignalIgnored, Disposition: kernel.DispositionIgnored, TargetTGID: 9}},
		{Time: t0, Kernel: &kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupRmdir, Time: t0}, ID: 9, Level: 3, Path: "/kubepods/pod1"}},
		{Time: t0, Runtime: &cri.Event{Type: cri.EventRuntimeAvailable, At: t0, Gap: &cri.Gap{Since: t0, Until: t0.Add(time.Second), Err: errors.New("connection refused")}}},
		{Time: t0, Runtime: &cri.Event{Type: cri.EventContainerExited, At: t0, Container: &cri.Container{ID: "c1", Name: "app", ExitCode: 137, Reason: "OOMKilled"}}},
		{Time: t0, Pod: &fact.PodInfo{UID: "u1", Name: "web", Namespace: "shop", CreatedAt: t0, DeletionTimestamp: &del, DeletionGracePeriodSeconds: &grace,
			Containers: []fact.ContainerSpec{{Name: "app", PreStop: &fact.Handler{Kind: "exec", Exec: []string{"sleep", "1"}}}}}},
		{Time: t0, Event: &fact.K8sEvent{UID: "e1", PodUID: "u1", Reason: "Killing", Count: 1}},
		{Time: t0, API: &fact.APIStatus{Available: false, Forbidden: true, Err: "forbidden"}},
		{Time: t0, Cgroup: &fact.CgroupSeen{ID: 9, Path: "/kubepods/pod1"}},
		{Time: t0, Proc: &fact.ProcSeen{PID: 3, PPID: 1, CgroupID: 9, Args: []string{"sleep", "1"}}},
		{Time: t0, Losses: &fact.Losses{Lost: 12}},
		{Time: t0, Losses: &fact.Losses{Throttled: []fact.CgroupLoss{{CgroupID: 9, Kind: "signal", Count: 3000}}}},
		{Time: t0, Progress: &fact.Progress{Source: fact.SourceRuntime, Until: t0.Add(-time.Second)}},
		{Time: t0, Tick: true},
		{Time: t0, Tick: true, Backlog: true},
		{Time: t0, Backlog: true, Progress: &fact.Progress{Source: fact.SourceKernel, Until: t0}},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if err := w.Write(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range inputs {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		a, _ := encode(want)
		b, _ := encode(got)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("input %d changed:\n want %s\n got  %s", i, ja, jb)
		}
	}
	if got := inputs[5].Runtime.Gap.Err.Error(); got != "connection refused" {
		t.Fatal(got)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF, got %v", err)
	}
}

func TestReaderRejectsOtherFiles(t *testing.T) {
	for _, in := range []string{"", "hello\n", `{"v":99,"k":"header","t":"1970-01-01T00:00:00Z"}` + "\n"} {
		if _, err := NewReader(strings.NewReader(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
	r, err := NewReader(strings.NewReader(`{"v":1,"k":"header","t":"1970-01-01T00:00:00Z"}` + "\n" + `{"k":"bogus","t":"1970-01-01T00:00:00Z"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bogus kind: %v", err)
	}
}

// Recordings made before progress lines existed (format 1) are still read.
func TestReadsVersion1(t *testing.T) {
	r, err := NewReader(strings.NewReader(`{"v":1,"k":"header","t":"1970-01-01T00:00:00Z"}` + "\n" + `{"k":"tick","t":"2026-11-22T03:00:00Z"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in, err := r.Next(); err != nil || !in.Tick {
		t.Fatalf("%+v %v", in, err)
	}
}

// Every command line an input carries is written as the policy keeps it:
// the execs', the scanned processes', the runtime's configured command, the
// pod spec's exec hooks and probes. The caller's input is not modified.
func TestCommandLinesRedactedInRecords(t *testing.T) {
	secret := []string{"app", "--password=hunter2"}
	exec := &kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec}, Args: secret}
	ins := []fact.Input{
		{Kernel: exec},
		{Proc: &fact.ProcSeen{PID: 7, Args: secret}},
		{Runtime: &cri.Event{Type: cri.EventContainerCreated, Container: &cri.Container{ID: "c1", Args: secret}}},
		{Pod: &fact.PodInfo{UID: "u", Containers: []fact.ContainerSpec{{Name: "app",
			PostStart: &fact.Handler{Kind: "exec", Exec: secret},
			Liveness:  &fact.ProbeSpec{Handler: fact.Handler{Kind: "exec", Exec: secret}}}}}},
	}
	for _, policy := range []redact.Policy{redact.Redacted, redact.None, redact.Argv0} {
		var b bytes.Buffer
		w, err := NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.SetArgs(policy)
		for _, in := range ins {
			if err := w.Write(in); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "hunter2") {
			t.Errorf("%s: the secret is in the record:\n%s", policy, b.String())
		}
		if policy == redact.Redacted && strings.Count(b.String(), `--password=***`) != 5 {
			t.Errorf("redacted: want the masked argument 5 times:\n%s", b.String())
		}
	}
	if exec.Args[1] != "--password=hunter2" {
		t.Errorf("the caller's event was modified: %q", exec.Args)
	}
}
