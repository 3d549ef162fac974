package correlate_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
)

// A pod's resource names its controller with the semantic conventions' keys
// (a Deployment's from its ReplicaSet's name and the template hash) and the
// allow-listed labels the watcher passed; an error span says its class in
// error.type, a successful one has none.
func TestSemconvResourceAndErrorType(t *testing.T) {
	s := newSim(t)
	s.info.OwnerUID, s.info.TemplateHash = "rs-uid", "7d9f"
	s.info.Labels = map[string]string{"app": "web"}
	app := s.startup()
	s.at(time.Second)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "OOMKilled")
	s.tick(3 * time.Second)

	st := s.one(names.SpanPodStartup)
	res := map[string]any{}
	for _, a := range st.Resource {
		res[a.Key] = a.Value
	}
	for k, want := range map[string]string{
		names.K8sReplicaSetName: "web-7d9f", names.K8sReplicaSetUID: "rs-uid", names.K8sDeploymentName: "web",
		names.K8sPodLabelPrefix + "app": "web",
	} {
		if res[k] != want {
			t.Errorf("resource %s = %v, want %q (all: %v)", k, res[k], want, st.Resource)
		}
	}
	if v := st.Attr(names.ErrorType); v != nil {
		t.Errorf("successful pod.startup has error.type %v", v)
	}
	run := s.one(names.SpanContainerRun)
	if run.Status != span.StatusError || run.Attr(names.ErrorType) != string(names.CauseOOMKilled) {
		t.Errorf("run: status %s, error.type %v, want error oom_killed", run.Status, run.Attr(names.ErrorType))
	}
}

// A command line leaves the model as Config.Args keeps it: by default with
// secret-looking values masked.
func TestCommandArgsRedactedByDefault(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.at(time.Second)
	sess := s.exec("app", 1, "mysql", "-uroot", "-ps3cr3t")
	s.at(100 * time.Millisecond)
	s.exit("app", sess, 0, 0)
	s.tick(3 * time.Second)
	var found bool
	for _, sp := range s.spans {
		args, ok := sp.Attr(names.ProcessCommandArgs).([]string)
		if !ok {
			continue
		}
		for _, a := range args {
			if strings.Contains(a, "s3cr3t") {
				t.Errorf("%s carries the secret: %q", sp.Name, args)
			}
			found = found || a == "-p***"
		}
	}
	if !found {
		t.Errorf("no span carries the masked session command line: %v", s.spans)
	}
}

// A successful start-up is measured by phase too, for the per-phase
// histogram.
func TestStartupPhasesMeasured(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.tick(3 * time.Second)
	got := strings.Join(s.o.calls, ";")
	for _, ph := range []string{names.PhaseScheduling, names.PhaseSandbox, names.PhaseInit, names.PhaseStart, names.PhaseReadiness} {
		if !strings.Contains(got, "phase shop "+ph) {
			t.Errorf("no %s phase measured: %v", ph, s.o.calls)
		}
	}
}
