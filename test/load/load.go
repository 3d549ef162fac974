// Package load puts a machine under background CPU load for the length of a
// test: one busy process per CPU at normal priority (the tracer, containerd,
// runc and the kernel's probes then compete for every core, as on a busy
// node), plus an optional light fork/exec churn. It is started and stopped by
// the test itself and never outlives it:
//
//   - Stop (or ctx's end, or Config.Max, whichever comes first) kills every
//     burner and waits for it;
//   - the burners are started from one locked OS thread with
//     PR_SET_PDEATHSIG=SIGKILL, so the kernel kills them when the test
//     process dies in any way (panic, os.Exit, go test's timeout, SIGKILL);
//   - a test binary that re-executes itself does not start a second load
//     (the owner's PID is passed down in PODCHRON_TEST_LOAD_OWNER).
//
// Tests switch it on with PODCHRON_TEST_LOAD (see FromEnv):
//
//	PODCHRON_TEST_LOAD=1        NumCPU burners + 20 exec/s
//	PODCHRON_TEST_LOAD=cpu      NumCPU burners only
//	PODCHRON_TEST_LOAD=0 or ""  off
//
// Usage:
//
//	l, err := load.Start(ctx, load.Config{})
//	defer l.Stop()       // returns what the load cost: CPU seconds burned, execs
package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Environment variables.
const (
	// Env switches the load on for tests that call FromEnv: "1" (or "on",
	// "true", "cpu+exec"), "cpu", or "0"/"" (off).
	Env = "PODCHRON_TEST_LOAD"
	// OwnerEnv is set by Start to the owner's PID, so that child processes
	// (a test binary re-executed as a helper) do not start a load of their
	// own.
	OwnerEnv = "PODCHRON_TEST_LOAD_OWNER"
)

// Defaults for Config's zero fields.
const (
	DefaultMax           = 30 * time.Minute
	DefaultExecPerSecond = 20
)

// Config describes the load. The zero value is NumCPU burners, no exec churn,
// at most DefaultMax.
type Config struct {
	// Workers is the number of busy processes (default runtime.NumCPU()).
	Workers int
	// ExecPerSecond is the rate of short-lived /bin/true processes forked
	// and exec'd (0: none; the rate is a ceiling, reached when the CPUs
	// allow).
	ExecPerSecond int
	// Max bounds the load's life whatever the caller does (default
	// DefaultMax).
	Max time.Duration
	// Logf, when set, receives one line at start and one at stop.
	Logf func(format string, args ...any)
}

// FromEnv reads Env: whether the load is asked for, and its configuration.
// It is off in a process whose parent owns a load already (OwnerEnv).
func FromEnv() (Config, bool, error) {
	v := strings.ToLower(strings.TrimSpace(os.Getenv(Env)))
	if o := os.Getenv(OwnerEnv); o != "" && o != strconv.Itoa(os.Getpid()) {
		return Config{}, false, nil
	}
	switch v {
	case "", "0", "off", "false", "no":
		return Config{}, false, nil
	case "1", "on", "true", "yes", "cpu+exec":
		return Config{ExecPerSecond: DefaultExecPerSecond}, true, nil
	case "cpu":
		return Config{}, true, nil
	}
	return Config{}, false, fmt.Errorf("%s=%q: want 1, cpu or 0", Env, v)
}

// Load is a running load.
type Load struct {
	cfg     Config
	started time.Time

	stopOnce sync.Once
	logOnce  sync.Once
	stop     chan struct{}
	done     chan struct{} // closed when the burners are reaped
	timer    *time.Timer

	execs    atomic.Uint64
	execErrs atomic.Uint64
	churnWG  sync.WaitGroup

	stats Stats
	pids  []int
}

// Stats is what a load did.
type Stats struct {
	Workers  int
	Wall     time.Duration // from Start to Stop
	CPU      time.Duration // user+system time the burners got
	Execs    uint64        // churn processes run
	ExecErrs uint64
	Reason   string // why it stopped: "stopped", "context done", "max reached"
}

// Cores is the average number of CPUs the burners kept busy.
func (s Stats) Cores() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return s.CPU.Seconds() / s.Wall.Seconds()
}

func (s Stats) String() string {
	return fmt.Sprintf("%d burners for %s got %.1f CPU-s (%.2f of %d cores busy on average), %d execs (%d failed); %s",
		s.Workers, s.Wall.Round(time.Millisecond), s.CPU.Seconds(), s.Cores(), runtime.NumCPU(), s.Execs, s.ExecErrs, s.Reason)
}

// burnScript is a pure user-space busy loop in the POSIX shell: no forks,
// no syscalls.
const burnScript = "while :; do :; done"

// Start starts the load. It stops at Stop, when ctx is done, or after
// cfg.Max, whichever comes first.
func Start(ctx context.Context, cfg Config) (*Load, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	var truePath string
	if cfg.ExecPerSecond > 0 {
		if truePath, err = exec.LookPath("true"); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
	}
	os.Setenv(OwnerEnv, strconv.Itoa(os.Getpid()))
	l := &Load{cfg: cfg, started: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	l.stats.Workers = cfg.Workers

	// The burners' parent thread: locked for their whole life, so that
	// PR_SET_PDEATHSIG (which follows the forking thread, not the process)
	// fires only when the test process is gone — or when this goroutine
	// returns after having killed them anyway.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		defer close(l.done)
		var cmds []*exec.Cmd
		for i := 0; i < cfg.Workers; i++ {
			c := exec.Command(sh, "-c", burnScript)
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				for _, c := range cmds {
					_ = c.Process.Kill()
					_ = c.Wait()
				}
				started <- fmt.Errorf("load: start burner: %w", err)
				return
			}
			cmds = append(cmds, c)
			l.pids = append(l.pids, c.Process.Pid)
		}
		started <- nil
		<-l.stop
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		var cpu time.Duration
		for _, c := range cmds {
			_ = c.Wait()
			if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
				cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			}
		}
		l.stats.CPU = cpu
	}()
	if err := <-started; err != nil {
		<-l.done
		return nil, err
	}
	if cfg.ExecPerSecond > 0 {
		l.churnWG.Add(1)
		go l.churn(truePath)
	}
	l.timer = time.AfterFunc(cfg.Max, func() { l.halt("max reached") })
	go func() {
		select {
		case <-ctx.Done():
			l.halt("context done")
		case <-l.stop:
		}
	}()
	if cfg.Logf != nil {
		what := fmt.Sprintf("%d busy processes (sh -c %q)", cfg.Workers, burnScript)
		if cfg.ExecPerSecond > 0 {
			what += fmt.Sprintf(" + up to %d exec/s of %s", cfg.ExecPerSecond, truePath)
		}
		cfg.Logf("load: started %s on %d CPUs, for at most %s", what, runtime.NumCPU(), cfg.Max)
	}
	return l, nil
}

func (l *Load) churn(truePath string) {
	defer l.churnWG.Done()
	tick := time.NewTicker(time.Second / time.Duration(l.cfg.ExecPerSecond))
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		c := exec.Command(truePath)
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Run(); err != nil {
			l.execErrs.Add(1)
		} else {
			l.execs.Add(1)
		}
	}
}

func (l *Load) halt(reason string) {
	l.stopOnce.Do(func() {
		l.stats.Reason = reason
		l.stats.Wall = time.Since(l.started)
		close(l.stop)
	})
}

// Stop ends the load (idempotent), waits until every process it started is
// gone and returns what it did.
func (l *Load) Stop() Stats {
	if l == nil {
		return Stats{}
	}
	l.halt("stopped")
	l.timer.Stop()
	<-l.done
	l.churnWG.Wait()
	st := l.stats
	st.Execs, st.ExecErrs = l.execs.Load(), l.execErrs.Load()
	if l.cfg.Logf != nil {
		l.logOnce.Do(func() { l.cfg.Logf("load: stopped: %s", st) })
	}
	return st
}

// PIDs are the burners' process ids.
func (l *Load) PIDs() []int { return append([]int(nil), l.pids...) }

// Done is closed once the burners are gone (after Stop, ctx's end or Max).
func (l *Load) Done() <-chan struct{} { return l.done }

// ErrOff is returned by StartFromEnv when the environment does not ask for
// a load.
var ErrOff = errors.New("load: off (" + Env + " unset or 0)")

// StartFromEnv starts the load FromEnv asks for; ErrOff when none.
func StartFromEnv(ctx context.Context, logf func(string, ...any)) (*Load, error) {
	cfg, on, err := FromEnv()
	if err != nil {
		return nil, err
	}
	if !on {
		return nil, ErrOff
	}
	cfg.Logf = logf
	return Start(ctx, cfg)
}
