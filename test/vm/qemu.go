package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// outcome classifies one guest run.
type outcome int

const (
	outcomePass        outcome = iota // marker seen, status 0
	outcomeTestsFailed                // marker seen, status != 0
	outcomePanic                      // kernel panic (or oops, with oops=panic)
	outcomeBootTimeout                // /init never started
	outcomeTimeout                    // overall timeout
	outcomeNoMarker                   // qemu exited without the exit marker
	outcomeQemuError                  // qemu could not start
)

func (o outcome) String() string {
	return [...]string{"PASS", "TESTS FAILED", "KERNEL PANIC", "BOOT TIMEOUT", "TIMEOUT", "EXIT MARKER MISSING", "QEMU ERROR"}[o]
}

// Exit codes of the runner for outcomes other than a test status.
const (
	exitSetup     = 2 // build / download / initramfs / qemu start problems
	exitPanic     = 3
	exitTimeout   = 4
	exitNoMarker  = 5
	exitBootHang  = 6
	maxShownLines = 80
)

var (
	panicRE    = regexp.MustCompile(`Kernel panic - not syncing`)
	oopsRE     = regexp.MustCompile(`(BUG: |Oops|general protection fault|kernel BUG at|------------\[ cut here \]|WARNING: CPU: |Kernel panic - not syncing|Call Trace:)`)
	warnRE     = regexp.MustCompile(`(BUG: |Oops|general protection fault|kernel BUG at|WARNING: CPU: |INFO: task .* blocked|RCU stall|soft lockup|hung_task)`)
	verifierRE = regexp.MustCompile(`(?i)(verifier|load program|processed \d+ insns|invalid bpf_context_access|R\d+ invalid mem access|unknown func bpf_)`)
	failRE     = regexp.MustCompile(`^\s*(--- FAIL: |FAIL\b|panic: |fatal error: )`)
	skipRE     = regexp.MustCompile(`^\s*--- SKIP: `)
	testEndRE  = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): `)
	pathRE     = regexp.MustCompile(`KERNEL-PATHS? (.*)$`)
	unameRE    = regexp.MustCompile(` kernel=(\S+)`)
	fileLineRE = regexp.MustCompile(`^\s*\S+\.go:\d+: `)
	// int3RE is the first oops of a breakpoint trap in kernel text: the
	// kernel's live text patching (static keys, text_poke_bp) plants an
	// int3, syncs every CPU, and removes it. Under multi-threaded TCG a
	// vCPU can still run a translation with the planted int3 after the
	// patch is done, and the kernel, finding no patch in flight, oopses.
	// Real CPUs serialize on the sync IPI; this is the emulator.
	oopsNumRE = regexp.MustCompile(`: [0-9a-f]{4} \[#\d+\]`)
	int3RE    = regexp.MustCompile(`\bint3: [0-9a-f]{4} \[#1\]`)
)

// consoleWatcher consumes guest console lines and remembers everything the
// final report needs. It is fed line by line (without trailing CR/LF).
type consoleWatcher struct {
	nonce string

	sawInit    bool
	initLine   string
	exitSeen   bool
	exitStatus int
	panicked   bool
	panicStart int // index into all of the first oops/panic context line
	results    []string
	fails      []string
	skips      []string
	verifier   []string
	warnings   []string
	all        []string
	lastOops   int  // index of the last line that looked like an oops start, -1 if none
	int3First  bool // the first oops was an int3 trap (see int3RE)
	oopses     int  // lines that start an oops ("[#n]")

	release string         // guest uname -r, from the init marker line
	counts  map[string]int // "PASS"/"FAIL"/"SKIP" of tests, subtests included
	paths   []string       // KERNEL-PATH(S) lines the probe tests log
}

func newConsoleWatcher(nonce string) *consoleWatcher {
	return &consoleWatcher{nonce: nonce, lastOops: -1, panicStart: -1}
}

func capAppend(s []string, l string) []string {
	if len(s) < maxShownLines {
		return append(s, l)
	}
	return s
}

func (w *consoleWatcher) line(l string) {
	w.all = append(w.all, l)
	idx := len(w.all) - 1
	if i := strings.Index(l, initMarker(w.nonce)); i >= 0 {
		w.sawInit = true
		w.initLine = l[i:]
		if m := unameRE.FindStringSubmatch(l); m != nil {
			w.release = m[1]
		}
	}
	if m := testEndRE.FindStringSubmatch(l); m != nil {
		if w.counts == nil {
			w.counts = map[string]int{}
		}
		w.counts[m[2]]++
	}
	if m := pathRE.FindStringSubmatch(l); m != nil {
		w.paths = capAppend(w.paths, strings.TrimSpace(m[1]))
	}
	if i := strings.Index(l, resultMarker(w.nonce)); i >= 0 {
		w.results = append(w.results, strings.TrimSpace(l[i+len(resultMarker(w.nonce)):]))
	}
	if i := strings.Index(l, exitMarker(w.nonce)); i >= 0 {
		digits := l[i+len(exitMarker(w.nonce)):]
		j := 0
		for j < len(digits) && digits[j] >= '0' && digits[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(digits[:j]); err == nil {
			w.exitSeen = true
			w.exitStatus = n
		}
	}
	if strings.Contains(l, "[#") && oopsNumRE.MatchString(l) {
		if w.oopses == 0 && int3RE.MatchString(l) {
			w.int3First = true
		}
		w.oopses++
	}
	if oopsRE.MatchString(l) && (w.lastOops < 0 || idx-w.lastOops > 200) {
		w.lastOops = idx
	}
	if warnRE.MatchString(l) {
		w.warnings = capAppend(w.warnings, l)
	}
	if panicRE.MatchString(l) && !w.panicked {
		w.panicked = true
		w.panicStart = idx
		if w.lastOops >= 0 && idx-w.lastOops <= 200 {
			w.panicStart = w.lastOops
		}
	}
	if verifierRE.MatchString(l) {
		w.verifier = capAppend(w.verifier, l)
	}
	if failRE.MatchString(l) {
		w.fails = capAppend(w.fails, l)
	}
	if skipRE.MatchString(l) {
		// go test -v prints the t.Skip reason just before "--- SKIP".
		s := strings.TrimSpace(l)
		if idx > 0 && fileLineRE.MatchString(w.all[idx-1]) {
			s += ": " + strings.TrimSpace(fileLineRE.ReplaceAllString(w.all[idx-1], ""))
		}
		w.skips = capAppend(w.skips, s)
	}
}

// dedupe collapses lines that only differ in their file:line prefix (the
// same verifier error reported by many tests), keeping the first and a
// count.
func dedupe(lines []string) []string {
	var out []string
	count := map[string]int{}
	pos := map[string]int{}
	for _, l := range lines {
		k := fileLineRE.ReplaceAllString(l, "")
		if _, ok := pos[k]; !ok {
			pos[k] = len(out)
			out = append(out, l)
		}
		count[k]++
	}
	for k, i := range pos {
		if count[k] > 1 {
			out[i] = fmt.Sprintf("%s  [x%d]", out[i], count[k])
		}
	}
	return out
}

// textPatchFault reports a panic whose first oops was an int3 trap in
// kernel text: under TCG, the emulator's stale translation of a text patch
// (see int3RE), not anything the tests or the probes did. BPF programs
// attached as tracepoints and tp_btf never patch text beyond the
// tracepoint's own static key.
func (w *consoleWatcher) textPatchFault() bool {
	return w.panicked && w.int3First
}

// panicLines returns the oops/panic context: from the first line of the
// oops (or the panic line) to the end of the output, capped.
func (w *consoleWatcher) panicLines() []string {
	if !w.panicked {
		return nil
	}
	ls := w.all[w.panicStart:]
	if len(ls) > maxShownLines {
		ls = ls[:maxShownLines]
	}
	return ls
}

func (w *consoleWatcher) tail(n int) []string {
	if len(w.all) <= n {
		return w.all
	}
	return w.all[len(w.all)-n:]
}

// classify decides the outcome once qemu is gone. timedOut / bootTimedOut
// tell whether the host killed qemu.
func (w *consoleWatcher) classify(timedOut, bootTimedOut bool) outcome {
	switch {
	case w.panicked:
		return outcomePanic
	case w.exitSeen && w.exitStatus == 0:
		return outcomePass
	case w.exitSeen:
		return outcomeTestsFailed
	case bootTimedOut:
		return outcomeBootTimeout
	case timedOut:
		return outcomeTimeout
	default:
		return outcomeNoMarker
	}
}

// exitCode maps an outcome to the runner's exit code; test failures pass the
// guest's test status through.
func (w *consoleWatcher) exitCode(o outcome) int {
	switch o {
	case outcomePass:
		return 0
	case outcomeTestsFailed:
		return w.exitStatus
	case outcomePanic:
		return exitPanic
	case outcomeTimeout:
		return exitTimeout
	case outcomeBootTimeout:
		return exitBootHang
	case outcomeNoMarker:
		return exitNoMarker
	default:
		return exitSetup
	}
}

type qemuConfig struct {
	Qemu        string
	Accel       string // "tcg" or "kvm"
	Kernel      string
	Initrd      string
	Append      string
	MemMiB      int
	SMP         int
	Timeout     time.Duration // whole run
	BootTimeout time.Duration // until the /init marker
	Nonce       string
	ShowBoot    bool      // also stream kernel boot messages before /init
	Out         io.Writer // live console
	Log         io.Writer // full console log
}

type qemuRun struct {
	Watcher      *consoleWatcher
	Outcome      outcome
	BootTime     time.Duration // host wall time from qemu start to /init marker
	Total        time.Duration
	QemuStderr   string
	QemuExit     error
	TimedOut     bool
	BootTimedOut bool
}

func qemuArgs(c qemuConfig) []string {
	args := []string{
		"-name", "podchron-vm",
		"-nodefaults", "-no-user-config",
		"-display", "none",
		"-serial", "stdio",
		"-no-reboot",
		"-m", strconv.Itoa(c.MemMiB),
		"-smp", strconv.Itoa(c.SMP),
		"-kernel", c.Kernel,
		"-initrd", c.Initrd,
		"-append", c.Append,
	}
	switch c.Accel {
	case "kvm":
		args = append(args, "-accel", "kvm", "-cpu", "host")
	default:
		args = append(args, "-accel", "tcg,thread=multi", "-cpu", "max")
	}
	return args
}

// runQemu boots the guest and streams its console until the guest powers
// off, panics (panic=-1 + -no-reboot make qemu exit), or a timeout fires.
func runQemu(ctx context.Context, c qemuConfig) *qemuRun {
	r := &qemuRun{Watcher: newConsoleWatcher(c.Nonce)}
	start := time.Now()
	cmd := exec.Command(c.Qemu, qemuArgs(c)...)
	cmd.Stdin = nil // /dev/null: qemu must not grab the terminal
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.Outcome, r.QemuExit = outcomeQemuError, err
		return r
	}
	if err := cmd.Start(); err != nil {
		r.Outcome, r.QemuExit = outcomeQemuError, err
		return r
	}

	var mu sync.Mutex // guards the watcher and timeout flags
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	done := make(chan struct{})
	go func() {
		overall := time.NewTimer(c.Timeout)
		boot := time.NewTimer(c.BootTimeout)
		defer overall.Stop()
		defer boot.Stop()
		var grace <-chan time.Time
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				mu.Lock()
				r.TimedOut = true
				mu.Unlock()
				kill()
				return
			case <-overall.C:
				mu.Lock()
				r.TimedOut = true
				mu.Unlock()
				kill()
				return
			case <-boot.C:
				mu.Lock()
				if !r.Watcher.sawInit && !r.Watcher.panicked {
					r.BootTimedOut = true
					mu.Unlock()
					kill()
					return
				}
				mu.Unlock()
			case <-tick.C:
				// Once the exit marker (or a panic) was printed, give the
				// guest a few seconds to power off, then stop it.
				mu.Lock()
				fin := r.Watcher.exitSeen || r.Watcher.panicked
				mu.Unlock()
				if fin && grace == nil {
					grace = time.After(15 * time.Second)
				}
			case <-grace:
				kill()
				return
			}
		}
	}()

	br := bufio.NewReaderSize(stdout, 64*1024)
	showing := c.ShowBoot
	for {
		l, err := br.ReadString('\n')
		if l != "" {
			l = strings.TrimRight(l, "\r\n")
			l = strings.ReplaceAll(l, "\r", "")
			mu.Lock()
			before := r.Watcher.sawInit
			r.Watcher.line(l)
			if !before && r.Watcher.sawInit {
				r.BootTime = time.Since(start)
				showing = true
			}
			mu.Unlock()
			if c.Log != nil {
				fmt.Fprintln(c.Log, l)
			}
			if showing || panicRE.MatchString(l) {
				fmt.Fprintln(c.Out, l)
			}
		}
		if err != nil {
			break
		}
	}
	r.QemuExit = cmd.Wait()
	close(done)
	r.Total = time.Since(start)
	r.QemuStderr = strings.TrimSpace(stderr.String())
	mu.Lock()
	defer mu.Unlock()
	r.Outcome = r.Watcher.classify(r.TimedOut, r.BootTimedOut)
	if r.Outcome == outcomeNoMarker && !r.Watcher.sawInit && len(r.Watcher.all) == 0 && r.QemuExit != nil {
		r.Outcome = outcomeQemuError
	}
	return r
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// kvmUsable reports whether /dev/kvm can be opened read-write.
func kvmUsable() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	f.Close()
	return nil
}
