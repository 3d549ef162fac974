package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/podchron/podchron/test/load"
)

// startLoad puts the node under background CPU load (test/load) for the
// scenarios when PODCHRON_TEST_LOAD=1 (`make test`, and so CI, sets it for
// `make e2e`): one busy process per CPU plus a light exec churn compete with
// the kubelet, containerd, the runtime and the tracer's DaemonSet pod. The
// load stops when the test that started it ends (before the cluster's
// teardown), when the test binary dies, or after load.DefaultMax.
func startLoad(t *testing.T) {
	t.Helper()
	l, err := load.StartFromEnv(context.Background(), t.Logf)
	if errors.Is(err, load.ErrOff) {
		t.Logf("no background load (%s unset or 0)", load.Env)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Stop() })
}
