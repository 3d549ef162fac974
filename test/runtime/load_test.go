package runtime_test

// Background CPU load for the runtime tests (test/load): with
// PODCHRON_TEST_LOAD=1 (`make test-load` and so `make test` and CI set it)
// every scenario runs while one busy process per CPU, plus a light exec
// churn, competes with containerd, the runtime, the tracer's pipeline and
// the probes. Off by default (a plain `go test ./...` runs unloaded).
//
// The load starts when the test binary starts (package init: TestMain is
// runtime_test.go's) and ends with the process: the burners die with it
// (PR_SET_PDEATHSIG), and at most after load.DefaultMax. TestMain may call
// stopTestLoad after m.Run to end it earlier and log what it cost.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/podchron/podchron/test/load"
)

var testLoad *load.Load

func init() {
	l, err := load.StartFromEnv(context.Background(), func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "test/runtime: "+f+"\n", a...)
	})
	switch {
	case errors.Is(err, load.ErrOff):
	case err != nil:
		fmt.Fprintf(os.Stderr, "test/runtime: %s: %v\n", load.Env, err)
		os.Exit(2)
	default:
		testLoad = l
	}
}

// stopTestLoad ends the load, if any, and logs what it did.
func stopTestLoad() {
	if testLoad != nil {
		testLoad.Stop()
	}
}
