//go:build linux

package probe

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"

	"golang.org/x/sys/unix"
)

// sentCount is what a signal-self helper said it sent.
func sentCount(t *testing.T, h *helper) uint64 {
	t.Helper()
	for _, l := range h.lines {
		if n, ok := strings.CutPrefix(l, "sent "); ok {
			v, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				t.Fatalf("helper %d: %q", h.pid, l)
			}
			return v
		}
	}
	t.Fatalf("helper %d said no count: %q", h.pid, h.lines)
	return 0
}

// sigusr1From counts the SIGUSR1 records a process sent.
func sigusr1From(c *collector, pid uint32, cg uint64) uint64 {
	return uint64(len(c.all(func(ev kernel.Event) bool {
		s, ok := ev.(*kernel.SignalEvent)
		return ok && s.TGID == pid && s.CgroupID == cg && s.Signal == syscall.SIGUSR1
	})))
}

// throttledBy sums a cgroup's refused records of one kind.
func throttledBy(t *testing.T, p *Probes, cg uint64, kind kernel.EventType) uint64 {
	t.Helper()
	th, err := p.Throttled()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, l := range th {
		if l.CgroupID == cg && l.Kind == kind.String() {
			n += l.Count
		}
	}
	return n
}

// One cgroup floods signals at full speed beside quiet ones: its budget
// bounds its records, what the budget refused is counted on it exactly
// (every signal is a record or counted), and the quiet cgroups lose
// nothing.
func TestSignalFloodIsBudgetedPerCgroup(t *testing.T) {
	// A small budget, so that even a slow flood (a guest kernel under
	// emulation) is far beyond it.
	const rate, burst = 100, 50
	const floodMs, quietN, quietSignals = 2000, 20, 20
	e := setup(t, func(c *Config) { c.SignalRate, c.SignalBurst = rate, burst })
	floodDir := e.dir(e.cgroup(t, "flood"))
	floodID := cgid(t, floodDir)
	flood := e.start(t, []string{floodDir}, "signal-self", "0", strconv.Itoa(floodMs))
	flood.waitReady(t)
	start := time.Now()
	quiet := make([]*helper, quietN)
	quietIDs := make([]uint64, quietN)
	for i := range quiet {
		dir := e.dir(e.cgroup(t, fmt.Sprintf("quiet%d", i)))
		quietIDs[i] = cgid(t, dir)
		quiet[i] = e.start(t, []string{dir}, "signal-self", strconv.Itoa(quietSignals), "0")
	}
	for _, h := range quiet {
		h.wait(t)
	}
	quietDone := time.Since(start)
	flood.wait(t)
	elapsed := time.Since(start)
	sent := sentCount(t, flood)

	// Every signal the flood sent is a record or counted as throttled. Its
	// last record may come well before its last signal: wait for the quiet
	// cgroups' records too.
	var records, throttled uint64
	quietRead := func() bool {
		for i, h := range quiet {
			if sigusr1From(e.col, h.pid, quietIDs[i]) < quietSignals {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		records, throttled = sigusr1From(e.col, flood.pid, floodID), throttledBy(t, e.p, floodID, kernel.EventSignalGenerate)
		if records+throttled >= sent && quietRead() || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("flood: %d signals in %s (%.0f/s), %d records, %d throttled; %d quiet cgroups done %s after the flood started",
		sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), records, throttled, quietN, quietDone.Round(time.Millisecond))
	if records+throttled != sent {
		t.Errorf("flood: %d records + %d throttled = %d, want the %d signals sent", records, throttled, records+throttled, sent)
	}
	lo := uint64(burst + rate*floodMs/1000/2)
	hi := uint64(burst + rate*(elapsed.Seconds()+0.1))
	if records < lo || records > hi {
		t.Errorf("flood: %d records, want between %d and %d (burst %d + %d/s over %s)", records, lo, hi, burst, rate, elapsed)
	}
	if sent < 10*hi {
		t.Errorf("flood: only %d signals sent; not a flood", sent)
	}
	for i, h := range quiet {
		if got := sigusr1From(e.col, h.pid, quietIDs[i]); got != quietSignals {
			t.Errorf("quiet cgroup %d: %d records, want all %d", i, got, quietSignals)
		}
		if n := throttledBy(t, e.p, quietIDs[i], kernel.EventSignalGenerate); n != 0 {
			t.Errorf("quiet cgroup %d: %d throttled", i, n)
		}
	}
	c, err := e.p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c[kernel.EventSignalGenerate].Lost != 0 {
		t.Errorf("%d signal records lost in the ring buffer", c[kernel.EventSignalGenerate].Lost)
	}
}

// A flood of handled signals makes a delivery record for each delivery
// too: both kinds draw on the cgroup's one budget, and what it refused of
// each is counted by kind.
func TestSignalDeliveriesShareTheBudget(t *testing.T) {
	const rate, burst, floodMs = 100, 50, 1000
	e := setup(t, func(c *Config) { c.SignalRate, c.SignalBurst = rate, burst })
	dir := e.dir(e.cgroup(t, "handled"))
	id := cgid(t, dir)
	flood := e.start(t, []string{dir}, "signal-self", "0", strconv.Itoa(floodMs), "handle")
	flood.waitReady(t)
	start := time.Now()
	flood.wait(t)
	elapsed := time.Since(start)
	sent := sentCount(t, flood)
	var generated, delivered, thGen, thDel uint64
	deadline := time.Now().Add(waitTimeout)
	for {
		generated = sigusr1From(e.col, flood.pid, id)
		delivered = uint64(len(e.col.all(func(ev kernel.Event) bool {
			d, ok := ev.(*kernel.SignalDeliverEvent)
			return ok && d.TGID == flood.pid && d.CgroupID == id && d.Signal == syscall.SIGUSR1
		})))
		thGen = throttledBy(t, e.p, id, kernel.EventSignalGenerate)
		thDel = throttledBy(t, e.p, id, kernel.EventSignalDeliver)
		if generated+thGen >= sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("handled flood: %d signals in %s; records: %d generated, %d delivered; throttled: %d generated, %d delivered",
		sent, elapsed.Round(time.Millisecond), generated, delivered, thGen, thDel)
	if generated+thGen != sent {
		t.Errorf("%d generate records + %d throttled = %d, want the %d signals sent", generated, thGen, generated+thGen, sent)
	}
	if hi := uint64(burst + rate*(elapsed.Seconds()+0.1)); generated+delivered > hi {
		t.Errorf("%d + %d records, want at most %d for the two kinds together", generated, delivered, hi)
	}
	if thDel == 0 {
		t.Errorf("no delivery record throttled (%d delivered)", delivered)
	}
}

// Four processes of one cgroup flooding at once, with the default budget:
// without a budget per cgroup their records overran the ring buffer and
// quiet cgroups beside them lost theirs (issue 20: at c9f781f 42,415
// records lost and 11 of 20 quiet cgroups got none of their 20 signals);
// with it, the ring buffer loses nothing and every quiet record arrives.
func TestSignalFloodersLeaveQuietCgroupsWhole(t *testing.T) {
	const floodMs, quietN, quietSignals, floods = 2000, 20, 20, 4
	e := setup(t)
	floodDir := e.dir(e.cgroup(t, "flood"))
	fl := make([]*helper, floods)
	for i := range fl {
		fl[i] = e.start(t, []string{floodDir}, "signal-self", "0", strconv.Itoa(floodMs))
		fl[i].waitReady(t)
	}
	quiet := make([]*helper, quietN)
	quietIDs := make([]uint64, quietN)
	for i := range quiet {
		dir := e.dir(e.cgroup(t, fmt.Sprintf("quiet%d", i)))
		quietIDs[i] = cgid(t, dir)
		quiet[i] = e.start(t, []string{dir}, "signal-self", strconv.Itoa(quietSignals), "0")
	}
	for _, h := range quiet {
		h.wait(t)
	}
	var sent uint64
	for _, h := range fl {
		h.wait(t)
		sent += sentCount(t, h)
	}
	quietRead := func() int {
		short := 0
		for i, h := range quiet {
			if sigusr1From(e.col, h.pid, quietIDs[i]) != quietSignals {
				short++
			}
		}
		return short
	}
	deadline := time.Now().Add(waitTimeout)
	for quietRead() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	c, err := e.p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d flooders sent %d signals; ring buffer: %d signal records lost; throttled %d", floods, sent,
		c[kernel.EventSignalGenerate].Lost, throttledBy(t, e.p, cgid(t, floodDir), kernel.EventSignalGenerate))
	for i, h := range quiet {
		if got := sigusr1From(e.col, h.pid, quietIDs[i]); got != quietSignals {
			t.Errorf("quiet cgroup %d: %d records, want all %d", i, got, quietSignals)
		}
	}
	if c[kernel.EventSignalGenerate].Lost != 0 {
		t.Errorf("%d signal records lost in the ring buffer", c[kernel.EventSignalGenerate].Lost)
	}
}

// A cgroup watched while its processes signal themselves: what the first
// sent before the watch is not reported, what the second sends after it is,
// as generated and as delivered, though the first left "not watched" for
// that cgroup in the signal programs' verdict caches on the same CPU (the
// target's, by the cgroup's address; the receiver's, by its id). WatchID
// raises the generation both caches check.
func TestWatchIDRefreshesCachedSignalVerdicts(t *testing.T) {
	e := setup(t)
	dir := e.layout.Path(fmt.Sprintf("/podchron-unwatched-%d-%d", os.Getpid(), testSeq.Add(1)))
	mkCgroup(t, dir)
	id := cgid(t, dir)
	// Both helpers on CPU 0, where the caches are per CPU: a child
	// inherits the affinity of the thread that forks it.
	run := func() *helper {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var all, cpu0 unix.CPUSet
		if err := unix.SchedGetaffinity(0, &all); err != nil {
			t.Fatal(err)
		}
		cpu0.Set(0)
		if err := unix.SchedSetaffinity(0, &cpu0); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = unix.SchedSetaffinity(0, &all) }()
		return e.start(t, []string{dir}, "signal-self", "3", "0", "handle")
	}
	records := func(pid uint32) (generated, delivered []kernel.Event) {
		generated = e.col.all(func(ev kernel.Event) bool {
			s, ok := ev.(*kernel.SignalEvent)
			return ok && s.TGID == pid && s.Signal == syscall.SIGUSR1
		})
		delivered = e.col.all(func(ev kernel.Event) bool {
			d, ok := ev.(*kernel.SignalDeliverEvent)
			return ok && d.TGID == pid && d.Signal == syscall.SIGUSR1
		})
		return generated, delivered
	}
	before := run()
	before.wait(t)
	if err := e.p.WatchID(id); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.p.UnwatchID(id) }()
	after := run()
	after.wait(t)
	sent := sentCount(t, after)
	deadline := time.Now().Add(waitTimeout)
	gen, del := records(after.pid)
	for (uint64(len(gen)) < sent || uint64(len(del)) < sent) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		gen, del = records(after.pid)
	}
	if uint64(len(gen)) != sent || uint64(len(del)) != sent {
		t.Errorf("once watched: %d generated and %d delivered records, want %d of each", len(gen), len(del), sent)
	}
	for _, ev := range gen {
		if s := ev.(*kernel.SignalEvent); s.Origin&kernel.OriginTarget == 0 || s.CgroupID != id {
			t.Errorf("generated once watched: origin %s cgroup %d, want the target watched, %d", s.Origin, s.CgroupID, id)
		}
	}
	for _, ev := range del {
		if d := ev.(*kernel.SignalDeliverEvent); d.Origin&kernel.OriginWatched == 0 || d.CgroupID != id {
			t.Errorf("delivered once watched: origin %s cgroup %d, want watched, %d", d.Origin, d.CgroupID, id)
		}
	}
	if gen, del := records(before.pid); len(gen)+len(del) != 0 {
		t.Errorf("before the watch: %d generated and %d delivered records, want none", len(gen), len(del))
	}
}
