package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
	"github.com/podchron/podchron/test/harness/containerd"
)

// criPIDs are the PIDs CRI gave each pod's container runs (0: the run was
// never seen running), in the demo's own pid namespace: the node's. The
// traces' process.pid must be the same numbers — on a node inside a
// container (-nested) too, where the kernel's own numbers are the host's.
type criPIDs struct {
	mu   sync.Mutex
	pids map[string][]int
	errs map[string][]string
}

var runPIDs = &criPIDs{pids: map[string][]int{}, errs: map[string][]string{}}

// record asks CRI for a started container's PID, as a kubelet sees it, and
// checks it is a process of the demo's /proc in that container's cgroup.
func (c *criPIDs) record(ctx context.Context, h *containerd.Harness, pod, id string) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ct, err := h.WaitContainer(wctx, id, func(ct cri.Container) bool { return ct.PID != 0 || ct.State == cri.StateExited })
	pid := ct.PID
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pids[pod] = append(c.pids[pod], pid)
	if err != nil || pid == 0 {
		return // exited before CRI was asked: nothing to compare
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		if !os.IsNotExist(err) {
			c.errs[pod] = append(c.errs[pod], fmt.Sprintf("CRI's pid %d of container %.12s: %v", pid, id, err))
		}
		return
	}
	if !strings.Contains(string(b), id) {
		c.errs[pod] = append(c.errs[pod], fmt.Sprintf("CRI's pid %d of container %.12s is not in its cgroup in this /proc: %q", pid, id, b))
	}
}

// check holds the pod's container.run spans' process.pid against CRI's.
func (c *criPIDs) check(all []span.Span, pod string) (problems []string, compared int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	problems = append(problems, c.errs[pod]...)
	var runs []span.Span
	for _, s := range named(all, names.SpanContainerRun) {
		if podOf(s) == pod {
			runs = append(runs, s)
		}
	}
	for i, pid := range c.pids[pod] {
		if pid == 0 || i >= len(runs) {
			continue
		}
		compared++
		if got, _ := runs[i].Attr(names.ProcessPID).(int64); got != int64(pid) {
			problems = append(problems, fmt.Sprintf("container.run #%d: process.pid %d, but CRI says the container's PID is %d", i+1, got, pid))
		}
	}
	return problems, compared
}
