package runtime_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/test/harness/containerd"
)

// The runtime matrix: each scenario runs on every OCI runtime
// (containerd.RuntimeNames: Debian's runc, the newest upstream runc, crun),
// one subtest per runtime with its own containerd, probes and pipeline.
//
//	PODCHRON_TEST_RUNTIMES=crun,runc   only these (names or absolute paths), in this order
//	PODCHRON_REQUIRE_RUNTIMES=1        a runtime that is not installed (or buildable) fails
//	                                   instead of skipping (`make test` sets it)
//	PODCHRON_RUNC_UPSTREAM=/path/runc  the upstream runc to use (else scripts/build-runc.sh)
const (
	runtimesEnv        = "PODCHRON_TEST_RUNTIMES"
	requireRuntimesEnv = "PODCHRON_REQUIRE_RUNTIMES"
)

// scenario is one pod lifecycle driven through CRI; run asserts what the
// spans must say (the right answer, on every runtime) and returns the pod's
// whole trace.
type scenario struct {
	name string // subtest of TestSpanTreesAcrossRuntimes and -record-dir file name
	run  func(t *testing.T, e *env) []span.Span
}

var scenarios = []scenario{gracefulStop, ignoredSIGTERM, oomKilled}

func matrixRuntimes() []string {
	if v := strings.TrimSpace(os.Getenv(runtimesEnv)); v != "" {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return containerd.RuntimeNames
}

// result of one scenario on one runtime.
type result struct {
	runtime  containerd.Runtime
	versions containerd.Versions
	spans    []span.Span   // nil when the run did not get to the end
	took     time.Duration // the whole subtest: harness start, scenario, cleanup
	status   string        // passed, failed, skipped
}

var results = struct {
	sync.Mutex
	m     map[string]map[string]*result // scenario -> runtime -> result
	trees map[string]string             // scenario -> TestSpanTreesAcrossRuntimes' verdict
}{m: map[string]map[string]*result{}, trees: map[string]string{}}

func setTreeVerdict(sc, v string) {
	results.Lock()
	defer results.Unlock()
	results.trees[sc] = v
}

func getResult(sc, rt string) *result {
	results.Lock()
	defer results.Unlock()
	return results.m[sc][rt]
}

func setResult(sc, rt string, r *result) {
	results.Lock()
	defer results.Unlock()
	if results.m[sc] == nil {
		results.m[sc] = map[string]*result{}
	}
	results.m[sc][rt] = r
}

// runOnRuntimes runs sc once per runtime, as subtests named after the
// runtimes, one after the other (the scenarios measure stop times).
func runOnRuntimes(t *testing.T, sc scenario) {
	for _, name := range matrixRuntimes() {
		runOnRuntime(t, sc, name)
	}
}

func runOnRuntime(t *testing.T, sc scenario, name string) {
	r := &result{runtime: containerd.Runtime{Name: name}}
	setResult(sc.name, name, r)
	began := time.Now()
	ok := t.Run(subtestName(name), func(t *testing.T) {
		defer func() {
			if t.Skipped() {
				r.status = "skip"
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		rt, err := containerd.ResolveRuntime(ctx, name)
		if err != nil {
			if errors.Is(err, containerd.ErrRequirements) && os.Getenv(requireRuntimesEnv) == "" {
				t.Skipf("OCI runtime %s not available: %v", name, err)
			}
			t.Fatalf("OCI runtime %s: %v", name, err)
		}
		r.runtime = rt
		record := recordName(sc.name, name)
		e := start(t, rt, record)
		r.versions = e.h.Versions
		r.spans = sc.run(t, e)
	})
	r.took = time.Since(began)
	switch {
	case !ok:
		r.status = "FAIL"
	case r.status == "":
		r.status = "ok"
	}
}

var recordRuntimes = flag.String("record-runtimes", "runc",
	"with -record-dir, the runtimes whose runs are recorded (comma-separated): <scenario>.jsonl for Debian's runc (the golden inputs), <scenario>@<runtime>.jsonl for the others")

// recordName is the -record-dir file name (without .jsonl) of a scenario's
// run on a runtime, "" when that run is not recorded.
func recordName(scenario, runtime string) string {
	for _, r := range strings.Split(*recordRuntimes, ",") {
		if strings.TrimSpace(r) != runtime {
			continue
		}
		if runtime == "runc" {
			return scenario
		}
		return scenario + "@" + subtestName(runtime)
	}
	return ""
}

// subtestName makes an absolute runtime path usable as a subtest name.
func subtestName(runtime string) string {
	return strings.ReplaceAll(strings.TrimPrefix(runtime, "/"), "/", "_")
}

func scenarioTest(sc scenario) string {
	switch sc.name {
	case gracefulStop.name:
		return "TestGracefulStop"
	case ignoredSIGTERM.name:
		return "TestIgnoredSIGTERM"
	case oomKilled.name:
		return "TestOOMKilled"
	}
	return sc.name
}

// matrixReport is the runtime × scenario table (versions, result, time per
// run) and the span-tree verdicts; empty when no scenario ran. TestMain
// prints it and, with $PODCHRON_RUNTIME_REPORT, writes it there (`make
// test` shows it even when go test hides passing packages' output).
func matrixReport() string {
	results.Lock()
	ran := len(results.m) > 0
	results.Unlock()
	if !ran {
		return ""
	}
	rts := matrixRuntimes()
	var b strings.Builder
	env := map[string]bool{}
	for _, name := range rts {
		for _, sc := range scenarios {
			if r := getResult(sc.name, name); r != nil && r.versions.Containerd != "" {
				env[fmt.Sprintf("%s, kernel %s", r.versions.Containerd, r.versions.Kernel)] = true
			}
		}
	}
	b.WriteString("test/runtime: runtime matrix")
	for e := range env {
		b.WriteString(" — " + e)
	}
	b.WriteString("\n")
	b.WriteString(timingTable(rts))
	results.Lock()
	defer results.Unlock()
	for _, sc := range scenarios {
		if v, ok := results.trees[sc.name]; ok {
			fmt.Fprintf(&b, "  span trees %-16s %s\n", sc.name+":", v)
		}
	}
	return b.String()
}

func writeMatrixReport() {
	rep := matrixReport()
	if rep == "" {
		return
	}
	fmt.Print(rep)
	if p := os.Getenv("PODCHRON_RUNTIME_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(rep), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "runtime report:", err)
		}
	}
}

func timingTable(rts []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-16s %-36s", "runtime", "version")
	for _, sc := range scenarios {
		fmt.Fprintf(&b, " %16s", sc.name)
	}
	fmt.Fprintf(&b, " %8s\n", "total")
	for _, name := range rts {
		var total time.Duration
		version := ""
		var cols []string
		for _, sc := range scenarios {
			r := getResult(sc.name, name)
			if r == nil {
				cols = append(cols, "-")
				continue
			}
			if version == "" {
				version = r.versions.Runtime
			}
			total += r.took
			cols = append(cols, r.status+" "+r.took.Round(100*time.Millisecond).String())
		}
		fmt.Fprintf(&b, "  %-16s %-36s", name, version)
		for _, c := range cols {
			fmt.Fprintf(&b, " %16s", c)
		}
		fmt.Fprintf(&b, " %8s\n", total.Round(100*time.Millisecond))
	}
	return b.String()
}
