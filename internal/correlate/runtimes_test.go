package correlate_test

import (
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// Streams recorded by test/runtime on other runtimes and kept for what
// they showed (testdata/runtimes).

// Upstream runc 1.5's "runc init" signals its own threads (SIG33, glibc's
// SIGSETXID) while it sets the container up: no signal of the container's.
func TestRuntimeSetupSignalsAreNotTheContainers(t *testing.T) {
	spans := replay(load(t, "testdata/runtimes/sig33-graceful-stop@runc-upstream-1.5.2.jsonl"))
	runs := 0
	for _, sp := range spans {
		if sp.Name == names.SpanContainerRun {
			runs++
			if sp.Attr(names.ExitCause) != "completed" {
				t.Errorf("run: %v", sp.Attrs)
			}
		}
		for _, ev := range sp.Events {
			if strings.HasPrefix(ev.Name, "signal SIG33") || strings.HasPrefix(ev.Name, "signal SIG32") {
				t.Errorf("%s has a runtime set-up signal event %s %v", sp.Name, ev.Name, ev.Attrs)
			}
		}
	}
	if runs != 1 {
		t.Errorf("%d container.run spans, want 1", runs)
	}
}

// The runtime reports a container started a moment before the kernel sees
// its command exec: container.start still names the command and its pid.
func TestContainerStartWaitsForTheExec(t *testing.T) {
	for _, f := range []string{"container-start-no-args-ignored-sigterm@runc.jsonl", "container-start-no-args-oom-killed@runc.jsonl"} {
		t.Run(f, func(t *testing.T) {
			var start *span.Span
			spans := replay(load(t, "testdata/runtimes/"+f))
			for i, sp := range spans {
				if sp.Name == names.SpanContainerStart {
					start = &spans[i]
				}
			}
			if start == nil {
				t.Fatal("no container.start span")
			}
			if start.Attr(names.ProcessCommandArgs) == nil || start.Attr(names.ProcessPID) == nil {
				t.Errorf("container.start without the command: %v", start.Attrs)
			}
		})
	}
}
