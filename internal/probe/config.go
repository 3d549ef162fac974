//go:build linux

package probe

import (
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/internal/probe/event"
)

// DefaultCgroupRoots are the kubepods roots of the cgroupfs and systemd
// cgroup drivers, relative to the hierarchy root.
var DefaultCgroupRoots = []string{"/kubepods", "/kubepods.slice"}

// DefaultCNIDirs are where runtimes usually find CNI plugins.
var DefaultCNIDirs = []string{"/opt/cni/bin/", "/usr/lib/cni/", "/usr/libexec/cni/", "/home/kubernetes/bin/"}

// DefaultRuntimeComms are comm prefixes of container runtime processes.
var DefaultRuntimeComms = []string{"containerd-shim", "runc", "crun", "conmon", "pause"}

// NoisySignals are not reported by default: they flood (SIGURG is the Go
// runtime's preemption signal, SIGCHLD follows every child's exit) and say
// nothing about a pod's lifecycle.
var NoisySignals = []syscall.Signal{syscall.SIGCHLD, syscall.SIGURG, syscall.SIGWINCH, syscall.SIGPROF, syscall.SIGVTALRM, syscall.SIGALRM, syscall.SIGIO}

// DefaultSignalMask reports every signal but NoisySignals.
func DefaultSignalMask() uint64 {
	m := ^uint64(0)
	for _, s := range NoisySignals {
		m &^= 1 << (uint(s) - 1)
	}
	return m
}

// Config are the probes' runtime settings, applied before load.
type Config struct {
	// CgroupRoots are the watched cgroup subtrees, relative to the hierarchy
	// root. Roots that do not exist yet are picked up when they are created.
	CgroupRoots []string
	// CNIDirs are directories (with trailing slash) holding CNI plugins.
	CNIDirs []string
	// RuntimeComms are comm prefixes of container runtime processes.
	RuntimeComms []string
	// SignalMask has bit (sig-1) set for each signal to report.
	SignalMask uint64
	// RingBufferBytes is the ring buffer size (a power of two, >= page size).
	RingBufferBytes int
	// WakeupEvents: the reader is woken on every WakeupEvents-th record of a
	// CPU, and on a CPU's first record after WakeupGap without one; a poll
	// every PollInterval picks up the rest. 0 wakes it on every
	// record (lowest latency, most CPU).
	WakeupEvents int
	// WakeupGap: see WakeupEvents (at most PollInterval; longer is taken
	// as PollInterval).
	WakeupGap time.Duration
	// PollInterval bounds how long an event can wait in the ring buffer.
	PollInterval time.Duration
	// IdlePollInterval is the reader's poll once it has found no record for
	// that long (a quiet node): a record after a quiet time wakes it
	// (WakeupEvents), so the poll only serves records that follow others
	// closely, and need not wake an idle tracer ten times a second (at
	// least PollInterval; shorter is taken as PollInterval).
	IdlePollInterval time.Duration
	// Clock, when set, stamps the events (the tracer's timeline,
	// internal/clock: boot clock from an epoch fixed at start). Without
	// it the source's own Clock follows the wall clock (resynced every
	// 10 s, steps included).
	Clock event.Clock
	// CgroupMode chooses v2 or v1-memory cgroup ids (auto-detected by default).
	CgroupMode cgroupfs.Mode
	// AllProcesses reports every process of a watched cgroup; by default
	// only the roots of its process tree are (see bpf/probes/process.h):
	// processes entering the cgroup from outside, a pid namespace's init,
	// the runtime's set-up before it execs.
	AllProcesses bool
	// SignalRate and SignalBurst are each cgroup's budget for signal records
	// (signal_generate sent by, signal_deliver received by a task in a
	// watched cgroup): SignalRate records a second on average, up to
	// SignalBurst at once. What a budget refuses is counted per cgroup
	// (Probes.Throttled), not reserved, so one pod flooding signals cannot
	// cost the others their events. 0 takes the default; a negative
	// SignalRate turns the budget off.
	SignalRate  int
	SignalBurst int
	// SelfTGID is never reported (default: this process).
	SelfTGID int
	Logger   *slog.Logger

	// NoopPrograms makes every program return at once, before reading
	// anything: the same hooks attached, nothing reported. For measuring the
	// floor of in-kernel cost only (bench/execstorm.sh, "floor" mode); a
	// tracer with it set sees no events at all.
	NoopPrograms bool

	// exitDedupe forces the exit deduplication older kernels need, so tests
	// cover that path on new kernels too.
	exitDedupe bool
}

// DefaultRingBufferBytes is the kernel ring buffer's default size, and the
// tracer's --ringbuf-size default: 2 MiB since the memory work of issue 21
// (bench/execstorm.sh reports the records lost at a size).
const DefaultRingBufferBytes = 2 << 20

// DefaultConfig returns production defaults.
func DefaultConfig() Config {
	return Config{
		CgroupRoots:      append([]string(nil), DefaultCgroupRoots...),
		CNIDirs:          append([]string(nil), DefaultCNIDirs...),
		RuntimeComms:     append([]string(nil), DefaultRuntimeComms...),
		SignalMask:       DefaultSignalMask(),
		RingBufferBytes:  DefaultRingBufferBytes,
		WakeupEvents:     256,
		WakeupGap:        100 * time.Millisecond,
		PollInterval:     100 * time.Millisecond,
		IdlePollInterval: time.Second,
		SignalRate:       DefaultSignalRate,
		SignalBurst:      DefaultSignalBurst,
	}
}

// DefaultSignalRate and DefaultSignalBurst are each cgroup's default budget
// for signal records: far above what a pod's lifecycle sends (a few signals
// at its end), far below what one ring buffer drains (~0.6 M records/s).
const (
	DefaultSignalRate  = 1000
	DefaultSignalBurst = 2000
)

// signalBudget is the budget as the programs keep it (GCRA, see
// bpf/probes/signal.h): the interval between records and the burst, in ns.
// A zero interval turns it off.
func (c *Config) signalBudget() (intervalNs, burstNs uint64) {
	if c.SignalRate < 0 {
		return 0, 0
	}
	interval := uint64(time.Second) / uint64(c.SignalRate)
	return interval, interval * uint64(c.SignalBurst)
}

func (c *Config) withDefaults() {
	d := DefaultConfig()
	if c.CgroupRoots == nil {
		c.CgroupRoots = d.CgroupRoots
	}
	if c.CNIDirs == nil {
		c.CNIDirs = d.CNIDirs
	}
	if c.RuntimeComms == nil {
		c.RuntimeComms = d.RuntimeComms
	}
	if c.SignalMask == 0 {
		c.SignalMask = d.SignalMask
	}
	if c.RingBufferBytes == 0 {
		c.RingBufferBytes = d.RingBufferBytes
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	if c.WakeupGap == 0 {
		c.WakeupGap = d.WakeupGap
	}
	c.WakeupGap = min(c.WakeupGap, c.PollInterval)
	if c.IdlePollInterval == 0 {
		c.IdlePollInterval = d.IdlePollInterval
	}
	c.IdlePollInterval = max(c.IdlePollInterval, c.PollInterval)
	if c.SignalRate == 0 {
		c.SignalRate = d.SignalRate
	}
	if c.SignalBurst == 0 {
		c.SignalBurst = d.SignalBurst
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Check reports whether the settings (with defaults filled in) are valid,
// without loading anything: callers check flags before attaching probes.
func (c Config) Check() error {
	c.withDefaults()
	return c.validate()
}

func (c *Config) validate() error {
	n := c.RingBufferBytes
	if n < 4096 || n&(n-1) != 0 {
		return fmt.Errorf("ring buffer size %d: must be a power of two of at least 4096", n)
	}
	if c.WakeupEvents < 0 || c.WakeupEvents*1024 >= n {
		return fmt.Errorf("wakeup every %d events: must be between 0 and ring buffer size / 1 KiB", c.WakeupEvents)
	}
	if c.PollInterval < 0 || c.WakeupGap < 0 {
		return fmt.Errorf("poll every %v, wakeup gap %v: must be positive", c.PollInterval, c.WakeupGap)
	}
	if c.SignalRate > int(time.Second) || c.SignalBurst < 0 || c.SignalBurst > 1<<20 {
		return fmt.Errorf("signal budget %d/s, burst %d: the rate must be at most 1e9 (negative: no budget), the burst between 1 and %d", c.SignalRate, c.SignalBurst, 1<<20)
	}
	for _, r := range c.CgroupRoots {
		if !strings.HasPrefix(r, "/") {
			return fmt.Errorf("cgroup root %q: must start with / (relative to the cgroup hierarchy root)", r)
		}
	}
	for _, d := range c.CNIDirs {
		if !strings.HasPrefix(d, "/") || len(d) > prefixKeyLen {
			return fmt.Errorf("CNI directory %q: must be absolute and at most %d bytes", d, prefixKeyLen)
		}
	}
	for _, p := range c.RuntimeComms {
		if p == "" || len(p) > 15 {
			return fmt.Errorf("runtime comm %q: must be 1 to 15 bytes", p)
		}
	}
	return nil
}

// rootLevel is the depth of a root path: "/kubepods" is 1.
func rootLevel(root string) int {
	root = strings.Trim(root, "/")
	if root == "" {
		return 0
	}
	return strings.Count(root, "/") + 1
}
