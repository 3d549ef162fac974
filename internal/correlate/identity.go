package correlate

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
)

// Container identity: which process is a container's init (its PID 1, the
// process whose exit ends the run), whatever way the runtime bootstraps it.
//
// Runtimes set a container up with processes of their own inside the
// container's cgroup before the configured command runs, and each does it
// differently: Debian's runc 1.1 re-executes "runc init" through
// /proc/self/exe and then from a sealed memfd (the kernel reports /dev/fd/6),
// upstream runc 1.2+ through /proc/self/fd/N (comm "6"), crun from a cloned
// fd, and the bootstrap forks twice (runc's nsexec stages) before the init
// execs the command. File names and comms are therefore no evidence. In order
// of trust, the init is:
//
//  1. the PID the runtime reports for the container over CRI (the verbose
//     ContainerStatus of containerd and CRI-O carries it);
//  2. the process that execs the container's configured command line (the
//     OCI spec's process.args, from the same status);
//  3. failing both (runtime unreachable, or its view not in yet), the
//     kernel's exec chain: the first process entering the container's cgroup
//     from outside that execs something other than a runtime's bootstrap.
//     A bootstrap names the runtime in its argv ("<path>/runc init"), which
//     every runc build keeps, whatever file the kernel executed.
//
// A later, more trusted fact corrects an earlier guess (counted as the
// correlation miss "init_corrected") as long as the run has not been
// emitted; the settle window after an exit leaves the runtime time for that.

// runtimeBinaries are the OCI runtimes and shims whose own processes can run
// inside a container's cgroup while it is set up or entered.
var runtimeBinaries = map[string]bool{
	"runc": true, "crun": true, "runsc": true, "youki": true, "krun": true,
	"conmon": true, "containerd-shim": true, "containerd-shim-runc-v2": true,
}

// containerInit: the container's init as the kernel saw it, and the
// runtime's word on it.
type containerInit struct {
	initPID  uint32
	initExec time.Time
	initArgs []string
	// criPID and cfgArgs are the runtime's word on the init (its PID and
	// the configured command line).
	criPID  uint32
	cfgArgs []string
}

// bootstrapArgv tells a runtime's own bootstrap exec by how it names itself
// (argv[0]), or by the runtime binary executed directly.
func bootstrapArgv(e *kernel.ExecEvent) bool {
	return runtimeArgv(e.Args) || runtimeBinaries[filepath.Base(e.Filename)] || strings.HasPrefix(e.Filename, "/memfd:runc")
}

// runtimeArgv: argv that names a runtime binary.
func runtimeArgv(args []string) bool {
	return len(args) > 0 && runtimeBinaries[filepath.Base(args[0])]
}

// configured tells whether argv is the container's configured command line
// as the runtime reported it.
func (ct *container) configured(argv []string) bool {
	return len(ct.cfgArgs) > 0 && argsMatch(ct.cfgArgs, argv)
}

// runtimeInit reports whether an exec is, by the runtime's own facts (its
// reported PID or the configured command line), the container's init.
func (ct *container) runtimeInit(e *kernel.ExecEvent) bool {
	if ct.criPID != 0 {
		return ct.criPID == e.TGID
	}
	return ct.configured(e.Args)
}

// bootstrapExec tells an exec of the runtime's bootstrap, unless the
// runtime's facts name it the init.
func (c *Correlator) bootstrapExec(ct *container, e *kernel.ExecEvent) bool {
	return bootstrapArgv(e) && !ct.runtimeInit(e)
}

// initDoubtful reports whether the current init is weaker evidence than an
// exec the runtime's facts name: the chain's guess, not the reported PID nor
// the configured command.
func (ct *container) initDoubtful() bool {
	if ct.initPID == 0 {
		return true
	}
	if ct.criPID != 0 {
		return ct.criPID != ct.initPID
	}
	return len(ct.cfgArgs) > 0 && !ct.configured(ct.initArgs)
}

// becomeInit makes pr the container's init as of its exec at `at` with argv.
func (c *Correlator) becomeInit(ct *container, pr *proc, at time.Time, args []string) {
	if ct.initPID != 0 && ct.initPID != pr.tgid {
		c.missOn(ct.pod, names.MissInitCorrected, ct.name)
		if old, ok := c.procs[ct.initPID]; ok && old.ctr == ct && old.session == nil {
			if old.execAt.IsZero() || runtimeArgv(old.args) {
				// The earlier guess was the runtime's set-up: its exit
				// is not the container's.
				old.bootstrap = true
			} else {
				// It ran a command of its own: a process entered from
				// outside before the init's exec (a postStart hook the
				// kubelet ran while the init was still exec'ing), which
				// is an exec session.
				s := &session{pid: old.tgid, args: old.args, start: old.execAt}
				s.kind = c.sessionKind(ct, old.args)
				ct.sessions[old.tgid] = s
				old.session = s
			}
		}
		if ct.exited && !ct.finalized && !ct.runtimeExit {
			ct.exited, ct.exitAt, ct.exitCode, ct.exitSignal = false, time.Time{}, 0, 0
		}
	}
	if pr.session != nil {
		if pr.session.pid == pr.tgid {
			delete(ct.sessions, pr.tgid)
		}
		pr.session = nil
	}
	pr.bootstrap = false
	c.putProc(pr)
	ct.initPID = pr.tgid
	ct.initExec = at
	ct.initArgs = args
	if ct.pod != nil && !ct.pod.startupDone && !ct.notApp() {
		ct.pod.addReadyEvidence(at)
	}
	c.note(change{kind: changeInitFound, ct: ct})
}

// runtimeIdentity takes the runtime's facts about a container (its init PID,
// its configured command line) and corrects the init if the kernel chain
// picked another process.
func (c *Correlator) runtimeIdentity(ct *container, pid int, args []string) {
	if len(args) > 0 {
		ct.cfgArgs = args
	}
	if pid > 0 {
		ct.criPID = uint32(pid)
	}
	if ct.finalized || ct.criPID == 0 || ct.initPID == ct.criPID {
		return
	}
	pr, ok := c.procs[ct.criPID]
	if !ok || pr.ctr != ct || pr.execAt.IsZero() {
		return // the kernel has not shown its exec (yet): exec() checks criPID
	}
	c.becomeInit(ct, pr, pr.execAt, pr.args)
}
