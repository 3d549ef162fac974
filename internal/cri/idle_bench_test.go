package cri_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/cri"
	crifact "github.com/podchron/podchron/internal/fact/cri"
	ctrd "github.com/podchron/podchron/test/harness/containerd"
)

// BenchmarkIdleNode measures what watching the runtime costs an idle node:
// IDLE_PODS (default 110, a node's pod limit) pods of one sleeping container
// each on a real containerd (PODCHRON_CONTAINERD picks the build: 1.6 has
// no event stream, 2.x has one), then, alternated IDLE_ROUNDS (2) times for
// IDLE_SECS (30) seconds each: no watcher; the watcher polling only (every
// 1 s, the default); the watcher with the runtime's event stream as well
// (where the runtime has one). Reported per minute: containerd's CPU
// (utime+stime from /proc) and this process's (the watcher; the harness is
// idle meanwhile), in CPU-ms, and the watcher's polls. Run:
//
//	go test -run '^$' -bench IdleNode -benchtime 1x ./internal/cri
func BenchmarkIdleNode(b *testing.B) {
	pods := envInt("IDLE_PODS", 110)
	rounds := envInt("IDLE_ROUNDS", 2)
	window := time.Duration(envInt("IDLE_SECS", 30)) * time.Second
	h := ctrd.Start(b, ctrd.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	t0 := time.Now()
	for i := range pods {
		pod, err := h.RunPodSandbox(ctx, ctrd.PodSpec{Name: fmt.Sprintf("idle-%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.RunContainer(ctx, pod, ctrd.ContainerSpec{Name: "app", Command: []string{"sleep", "3600"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d pods started in %s (containerd pid %d)", pods, time.Since(t0).Round(time.Second), h.ContainerdPID())
	type result struct{ ctrdMs, selfMs, polls []float64 }
	modes := []string{"none", "poll", "stream"}
	res := map[string]*result{}
	for _, m := range modes {
		res[m] = &result{}
	}
	perMin := func(d time.Duration, v float64) float64 { return v * float64(time.Minute) / float64(d) }
	for r := range rounds {
		for i := range modes {
			mode := modes[(i+r)%len(modes)]
			var w *cri.Watcher
			wctx, wcancel := context.WithCancel(ctx)
			done := make(chan struct{})
			if mode != "none" {
				w = cri.NewWatcher(cri.WatchConfig{Endpoint: h.Endpoint, NoEventStream: mode == "poll",
					Logger: ctrd.TestLogger(b, slog.LevelWarn)})
				out := make(chan crifact.Event, 4096)
				go func() { defer close(done); _ = w.Run(wctx, out) }()
				go func() {
					for {
						select {
						case <-out:
						case <-wctx.Done():
							return
						}
					}
				}()
				time.Sleep(3 * time.Second) // the first poll's statuses
			} else {
				close(done)
			}
			c0, s0, p0 := procCPU(h.ContainerdPID()), selfCPU(), polls(w)
			start := time.Now()
			time.Sleep(window)
			d := time.Since(start)
			c1, s1, p1 := procCPU(h.ContainerdPID()), selfCPU(), polls(w)
			wcancel()
			<-done
			rs := res[mode]
			rs.ctrdMs = append(rs.ctrdMs, perMin(d, float64(c1-c0)/float64(time.Millisecond)))
			rs.selfMs = append(rs.selfMs, perMin(d, float64(s1-s0)/float64(time.Millisecond)))
			rs.polls = append(rs.polls, perMin(d, float64(p1-p0)))
			b.Logf("round %d %-6s containerd %6.0f CPU-ms/min, watcher process %6.0f CPU-ms/min, %4.0f polls/min",
				r+1, mode, rs.ctrdMs[len(rs.ctrdMs)-1], rs.selfMs[len(rs.selfMs)-1], rs.polls[len(rs.polls)-1])
		}
	}
	for _, m := range modes {
		rs := res[m]
		b.ReportMetric(mean(rs.ctrdMs), m+"-containerd-cpu-ms/min")
		b.ReportMetric(mean(rs.selfMs), m+"-watcher-cpu-ms/min")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(max(len(v), 1))
}

func polls(w *cri.Watcher) uint64 {
	if w == nil {
		return 0
	}
	return w.Polls()
}

// procCPU is a process's utime+stime (all threads).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
