package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A recording of format 2, whose sandboxes and containers were written with
// their Go field names, reads into the same values. Its first runtime line
// is copied from internal/correlate/testdata/oom-killed.jsonl; the second
// has every field the version 2 writer wrote, the third a gap.
func TestReadsVersion2RuntimeEvents(t *testing.T) {
	f, err := os.Open("testdata/version2-runtime.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	sb1 := &cri.Sandbox{
		ID: "1b2621a06be1095b373741a005cc24a4aef03af725b2f8fcd445f559671068b5", PodName: "hungry", PodNamespace: "batch",
		PodUID: "4686fd83-c297-44ad-94a2-cce45aa1eff4", State: cri.SandboxReady, CreatedAt: at(t, "2026-11-24T06:37:49.247404221Z"),
		IP: "10.232.200.2", NetNSPath: "/tmp/ptctrd-3335863221/state/io.containerd.grpc.v1.cri/netns/cni-b211756a-a551-b553-90c9-ac6c54b864fc",
		PID: 12904, CgroupsPath: "/podchron-e2e-60cbbc9b/burstable/pod4686fd83-c297-44ad-94a2-cce45aa1eff4/1b2621a06be1095b373741a005cc24a4aef03af725b2f8fcd445f559671068b5",
		Labels:      map[string]string{"io.kubernetes.pod.name": "hungry", "io.kubernetes.pod.namespace": "batch", "io.kubernetes.pod.uid": "4686fd83-c297-44ad-94a2-cce45aa1eff4"},
		Annotations: map[string]string{"kubernetes.io/config.seen": "2026-11-24T06:37:49.242614624Z", "kubernetes.io/config.source": "api"},
	}
	c1 := &cri.Container{
		ID: "462bce4135702a26cb95727cb00444cc62d657e68c5d301427d7cc0ed94a5faa", SandboxID: sb1.ID, Name: "eater",
		PodName: "hungry", PodNamespace: "batch", PodUID: "4686fd83-c297-44ad-94a2-cce45aa1eff4",
		Image: "localhost/podchron-e2e/busybox:latest", ImageRef: "sha256:c55920dfee910ec464c6b0d727d1064b0bf0426e297c5bb83e17a988254ac17d",
		State: cri.StateExited, CreatedAt: at(t, "2026-11-24T06:37:49.318332875Z"), StartedAt: at(t, "2026-11-24T06:37:49.354372646Z"),
		FinishedAt: at(t, "2026-11-24T06:37:49.895355013Z"), ExitCode: 137, Reason: cri.ReasonOOMKilled,
		Args:        []string{"sh", "-c", "sleep 0.5; dd if=/dev/zero of=/dev/null bs=256M count=1"},
		CgroupsPath: "/podchron-e2e-60cbbc9b/burstable/pod4686fd83-c297-44ad-94a2-cce45aa1eff4/462bce4135702a26cb95727cb00444cc62d657e68c5d301427d7cc0ed94a5faa",
		LogPath:     "/tmp/ptctrd-3335863221/pods/batch_hungry_4686fd83-c297-44ad-94a2-cce45aa1eff4/eater/0.log", MemoryLimitBytes: 33554432,
		Labels:      map[string]string{"io.kubernetes.container.name": "eater", "io.kubernetes.pod.name": "hungry", "io.kubernetes.pod.namespace": "batch", "io.kubernetes.pod.uid": "4686fd83-c297-44ad-94a2-cce45aa1eff4"},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": "0", "io.kubernetes.container.terminationMessagePath": "/dev/termination-log"},
	}
	sb2 := &cri.Sandbox{
		ID: "sb2", PodName: "web", PodNamespace: "shop", PodUID: "u2", Attempt: 1, State: cri.SandboxReady,
		CreatedAt: at(t, "2026-11-24T06:39:50Z"), IP: "10.0.0.7", AdditionalIPs: []string{"fd00::7"}, NetNSPath: "/var/run/netns/cni-1",
		PID: 4242, CgroupsPath: "/kubepods/podu2/sb2", RuntimeHandler: "runc",
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}, Detailed: true,
	}
	c2 := &cri.Container{
		ID: "c2", SandboxID: "sb2", Name: "app", Attempt: 2, PodName: "web", PodNamespace: "shop", PodUID: "u2",
		Image: "nginx:1", ImageRef: "sha256:abc", State: cri.StateRunning,
		CreatedAt: at(t, "2026-11-24T06:39:55Z"), StartedAt: at(t, "2026-11-24T06:39:58Z"), Message: "hello", PID: 4300,
		Args: []string{"nginx", "-g", "daemon off;"}, CgroupsPath: "/kubepods/podu2/c2", LogPath: "/var/log/pods/c2.log",
		MemoryLimitBytes: 1048576, Labels: map[string]string{"io.kubernetes.container.name": "app"}, Annotations: map[string]string{"x": "y"},
		Runtime: cri.RuntimeVersion{Name: "containerd", Version: "2.1.4", APIVersion: "v1"}, Detailed: true,
	}
	want := []fact.Input{
		{Time: at(t, "2026-11-24T06:37:50.052045957Z"), Runtime: &cri.Event{Type: cri.EventContainerExited, Phase: cri.PhaseLive,
			At: at(t, "2026-11-24T06:37:49.895355013Z"), Observed: at(t, "2026-11-24T06:37:50.051033296Z"), Sandbox: sb1, Container: c1}},
		{Time: at(t, "2026-11-24T06:40:00Z"), Runtime: &cri.Event{Type: cri.EventContainerStarted, Phase: cri.PhaseResync,
			At: at(t, "2026-11-24T06:39:58Z"), Observed: at(t, "2026-11-24T06:40:00Z"), Sandbox: sb2, Container: c2}},
		{Time: at(t, "2026-11-24T06:41:00Z"), Runtime: &cri.Event{Type: cri.EventRuntimeAvailable, At: at(t, "2026-11-24T06:41:00Z"),
			Gap: &cri.Gap{LastSeen: at(t, "2026-11-24T06:40:30Z"), Since: at(t, "2026-11-24T06:40:31Z"), Until: at(t, "2026-11-24T06:41:00Z"),
				Attempts: 3, Err: errors.New("connection refused")}}},
	}
	if len(got) != len(want) {
		t.Fatalf("read %d inputs, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("input %d:\n got  %+v\n want %+v", i, got[i].Runtime, want[i].Runtime)
		}
	}
}

// Every field of a sandbox and a container is written under a snake_case
// key and reads back to the same value.
func TestRuntimeEventRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	sb := &cri.Sandbox{
		ID: "sb", PodName: "web", PodNamespace: "shop", PodUID: "u", Attempt: 1, State: cri.SandboxNotReady, CreatedAt: t0,
		IP: "10.0.0.1", AdditionalIPs: []string{"fd00::1"}, NetNSPath: "/run/netns/x", PID: 7, CgroupsPath: "/kubepods/podu/sb",
		RuntimeHandler: "kata", Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"}, Detailed: true,
	}
	ct := &cri.Container{
		ID: "c", SandboxID: "sb", Name: "app", Attempt: 3, PodName: "web", PodNamespace: "shop", PodUID: "u",
		Image: "img:1", ImageRef: "sha256:1", State: cri.StateExited, CreatedAt: t0, StartedAt: t0.Add(time.Second),
		FinishedAt: t0.Add(2 * time.Second), ExitCode: 1, Reason: cri.ReasonError, Message: "boom", PID: 9,
		Args: []string{"app", "--flag"}, CgroupsPath: "/kubepods/podu/c", LogPath: "/var/log/c.log", MemoryLimitBytes: 4096,
		Labels: map[string]string{"l": "3"}, Annotations: map[string]string{"a": "4"},
		Runtime: cri.RuntimeVersion{Name: "containerd", Version: "2.1", APIVersion: "v1"}, Detailed: true,
	}
	for _, v := range []any{*sb, *ct, ct.Runtime} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Fatalf("%T.%s is zero in the test: set it, so that the round trip covers it", v, rv.Type().Field(i).Name)
			}
		}
	}
	in := fact.Input{Time: t0, Runtime: &cri.Event{Type: cri.EventContainerExited, Phase: cri.PhaseLive, At: t0, Observed: t0, Sandbox: sb, Container: ct}}
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], in) {
		t.Fatalf("read back %+v, want %+v", got, in)
	}

	// The keys: snake_case, one per field.
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	var l struct {
		D struct {
			Sandbox   map[string]json.RawMessage `json:"sandbox"`
			Container map[string]json.RawMessage `json:"container"`
		} `json:"d"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &l); err != nil {
		t.Fatal(err)
	}
	var rt map[string]json.RawMessage
	if err := json.Unmarshal(l.D.Container["runtime"], &rt); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, c := range []struct {
		obj map[string]json.RawMessage
		typ reflect.Type
	}{{l.D.Sandbox, reflect.TypeFor[cri.Sandbox]()}, {l.D.Container, reflect.TypeFor[cri.Container]()}, {rt, reflect.TypeFor[cri.RuntimeVersion]()}} {
		if len(c.obj) != c.typ.NumField() {
			t.Errorf("%s written with %d keys, it has %d fields", c.typ, len(c.obj), c.typ.NumField())
		}
		for k := range c.obj {
			if !snake.MatchString(k) {
				t.Errorf("%s written with key %q, want snake_case", c.typ, k)
			}
		}
	}
}
