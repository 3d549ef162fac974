//go:build linux

// Package probe loads podchron's eBPF programs (bpf/), attaches them to
// stable kernel tracepoints and reads their events: this is where kernel
// events enter podchron.
package probe

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/probe/event"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cgroupfs"
)

const prefixKeyLen = 64

// Probes are the loaded and attached programs with their maps.
type Probes struct {
	cfg    Config
	layout cgroupfs.Layout
	ns     Namespaces
	objs   event.PodchronObjects
	links  []link.Link
	log    *slog.Logger

	mu    sync.Mutex
	roots map[string]bool // configured roots, by path relative to the hierarchy
	// The kernel only looks up ancestors at the levels of the roots
	// configured at load time.
	minLevel, maxLevel int
	// Kernel-dependent variants chosen at load: the ancestor helper
	// (haveAncestorHelper), group_dead in sched_process_exit (exitHasGroupDead).
	groupDead, ancestorHelper bool

	genMu sync.Mutex
	gen   uint64 // user space's generation of the watched set (watch_gen[1])
}

// Load checks the host, loads the programs with cfg applied and attaches them.
func Load(cfg Config) (*Probes, error) {
	cfg.withDefaults()
	if len(cfg.CgroupRoots) == 0 {
		return nil, errors.New("probe config: no cgroup roots to watch")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("probe config: %w", err)
	}
	if err := Preflight(); err != nil {
		return nil, err
	}
	layout, err := cgroupfs.Detect(cfg.CgroupMode)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock rlimit: %w", err)
	}
	if cfg.SelfTGID == 0 {
		cfg.SelfTGID = os.Getpid()
	}

	spec, err := event.LoadPodchron()
	if err != nil {
		return nil, fmt.Errorf("parse embedded BPF object: %w", err)
	}
	ns, err := loadNamespaces(spec, layout, cfg.Logger)
	if err != nil {
		return nil, err
	}
	minLevel, maxLevel := rootLevels(cfg.CgroupRoots)
	groupDead, err := exitHasGroupDead()
	if err != nil {
		return nil, err
	}
	if cfg.exitDedupe {
		groupDead = 0
	}
	ancestorHelper := flag32(haveAncestorHelper())
	intervalNs, burstNs := cfg.signalBudget()
	if cfg.NoopPrograms {
		cfg.Logger.Warn("benchmark mode: every BPF program returns at once; nothing will be traced")
	}
	if err := setVariables(spec, map[string]any{
		"cfg_all_processes":       flag32(cfg.AllProcesses),
		"cfg_self_tgid":           uint32(cfg.SelfTGID),
		"cfg_self_host_tgid":      selfHostTGID(cfg.SelfTGID, ns),
		"cfg_cgroup_v1":           flag32(layout.Mode == cgroupfs.ModeV1Memory),
		"cfg_hierarchy_id":        layout.HierarchyID(),
		"cfg_report_level":        int32(maxLevel + ns.CgroupLevel), // the kernel's levels count from the real root
		"cfg_pidns_level":         ns.PIDLevel,
		"cfg_pidns_ino":           ns.PIDNamespace,
		"cfg_signal_mask":         cfg.SignalMask,
		"cfg_wakeup_events":       uint32(cfg.WakeupEvents),
		"cfg_wakeup_gap_ns":       uint64(cfg.WakeupGap),
		"cfg_exit_has_group_dead": groupDead,
		"cfg_ancestor_helper":     ancestorHelper,
		"cfg_noop":                flag32(cfg.NoopPrograms),
		"cfg_signal_interval_ns":  intervalNs,
		"cfg_signal_burst_ns":     burstNs,
	}); err != nil {
		return nil, err
	}
	spec.Maps["events"].MaxEntries = uint32(cfg.RingBufferBytes)

	p := &Probes{cfg: cfg, layout: layout, ns: ns, log: cfg.Logger, roots: map[string]bool{}, minLevel: minLevel, maxLevel: maxLevel,
		groupDead: groupDead == 1 && !cfg.exitDedupe, ancestorHelper: ancestorHelper == 1}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		return nil, verifierError(err)
	}
	if err := p.configure(); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.attach(); err != nil {
		p.Close()
		return nil, err
	}
	p.log.Debug("probes loaded", "ancestor_helper", p.ancestorHelper, "exit_group_dead", p.groupDead)
	return p, nil
}

// loadNamespaces reads the tracer's namespaces (see Namespaces): on a node
// inside a container, pids and cgroup paths are reported as they see them.
func loadNamespaces(spec *ebpf.CollectionSpec, layout cgroupfs.Layout, log *slog.Logger) (Namespaces, error) {
	ns, err := readNamespaces(spec, layout)
	switch {
	case errors.Is(err, errMountNotAncestor):
		// As before namespaces were known: kernel paths taken as they are.
		log.Warn("cgroup paths are reported from the hierarchy's root", "err", err)
		ns.CgroupRoot, ns.CgroupLevel = "/", 0
	case err != nil && initialPIDNamespace():
		// A kernel that cannot load or run nsinfo: in the initial pid
		// namespace nothing needs translating (cgroup paths are taken as
		// they are, as before nsinfo).
		log.Warn("cannot read the tracer's namespaces; it runs in the initial pid namespace, so pids need no translation", "err", err)
		ns = Namespaces{CgroupRoot: "/"}
	case err != nil:
		return ns, fmt.Errorf("the tracer's namespaces: %w", err)
	}
	if ns.Nested() {
		log.Info("the tracer runs in its own namespaces: pids and cgroup paths are reported as they see them",
			"pid_ns_level", ns.PIDLevel, "cgroup_root", ns.CgroupRoot)
	}
	return ns, nil
}

// rootLevels returns the lowest and highest level of the cgroup roots.
func rootLevels(roots []string) (minLevel, maxLevel int) {
	minLevel, maxLevel = 15, 0
	for _, r := range roots {
		minLevel = min(minLevel, rootLevel(r))
		maxLevel = max(maxLevel, rootLevel(r))
	}
	if minLevel > maxLevel {
		minLevel = maxLevel
	}
	return minLevel, maxLevel
}

// setVariables sets the programs' settings (const volatile variables).
func setVariables(spec *ebpf.CollectionSpec, vars map[string]any) error {
	for name, val := range vars {
		v, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("BPF object has no variable %s", name)
		}
		if err := v.Set(val); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// flag32 is a boolean setting as the programs' __u32 variables hold it.
func flag32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// exitHasGroupDead tells whether the kernel's sched_process_exit tracepoint
// passes group_dead (Linux 6.16+), from its BTF prototype.
func exitHasGroupDead() (uint32, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoBTF, err)
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_process_exit", &td); err != nil {
		return 0, fmt.Errorf("kernel BTF has no sched_process_exit tracepoint: %w", err)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return 0, fmt.Errorf("btf_trace_sched_process_exit: unexpected type %s", td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok {
		return 0, fmt.Errorf("btf_trace_sched_process_exit: unexpected type %s", ptr.Target)
	}
	// (void *__data, struct task_struct *p[, bool group_dead])
	if len(proto.Params) >= 3 {
		return 1, nil
	}
	return 0, nil
}

// verifierError adds the tail of the verifier log to a load error.
func verifierError(err error) error {
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return fmt.Errorf("load BPF programs: %w", err)
	}
	lines := ve.Log
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return fmt.Errorf("load BPF programs: the verifier rejected a program: %w\nverifier log (last %d lines):\n%s",
		err, len(lines), strings.Join(lines, "\n"))
}

func prefixKey(s string, bits int) event.PodchronPrefixKey {
	var k event.PodchronPrefixKey
	k.Prefixlen = uint32(bits)
	copy(k.Data[:], s)
	return k
}

func (p *Probes) configure() error {
	one := uint8(1)
	for _, d := range p.cfg.CNIDirs {
		k := prefixKey(d, 8*len(d))
		if err := p.objs.CniDirs.Put(&k, &one); err != nil {
			return fmt.Errorf("add CNI directory %s: %w", d, err)
		}
	}
	for _, c := range p.cfg.RuntimeComms {
		k := prefixKey(c, 8*len(c))
		if err := p.objs.RuntimeComms.Put(&k, &one); err != nil {
			return fmt.Errorf("add runtime comm %s: %w", c, err)
		}
	}
	for _, r := range p.cfg.CgroupRoots {
		if err := p.AddRoot(r); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// AddRoot watches the cgroup subtree at rel (relative to the hierarchy
// root). A root that does not exist yet is remembered and watched as soon as
// it is created; os.ErrNotExist is returned for it.
func (p *Probes) AddRoot(rel string) error {
	rel = "/" + strings.Trim(rel, "/")
	if l := rootLevel(rel); l < p.minLevel || l > p.maxLevel {
		return fmt.Errorf("cgroup root %s is at level %d; the probes were loaded for roots at levels %d to %d", rel, l, p.minLevel, p.maxLevel)
	}
	p.mu.Lock()
	p.roots[rel] = true
	p.mu.Unlock()
	if len(rel) >= len(event.PodchronRootPath{}.Path) {
		return fmt.Errorf("cgroup root %s: longer than %d bytes", rel, len(event.PodchronRootPath{}.Path)-1)
	}
	// The kernel's cgroup_mkdir reports the path from the hierarchy's root.
	kpath := p.ns.KernelPath(rel)
	if len(kpath) >= len(event.PodchronRootPath{}.Path) {
		return fmt.Errorf("cgroup root %s: longer than %d bytes", kpath, len(event.PodchronRootPath{}.Path)-1)
	}
	var key event.PodchronRootPath
	for i := 0; i < len(kpath); i++ {
		key.Path[i] = int8(kpath[i])
	}
	one := uint8(1)
	if err := p.objs.RootPaths.Put(&key, &one); err != nil {
		return fmt.Errorf("add cgroup root %s: %w", rel, err)
	}
	id, err := p.layout.ID(rel)
	if err != nil {
		p.log.Debug("cgroup root not present yet; will watch it once created", "root", rel)
		return err
	}
	return p.WatchID(id)
}

// WatchID watches the subtree below the cgroup with this id.
func (p *Probes) WatchID(id uint64) error {
	one := uint8(1)
	if err := p.objs.WatchedCgroups.Put(&id, &one); err != nil {
		return fmt.Errorf("watch cgroup %d: %w", id, err)
	}
	return p.watchedChanged()
}

// UnwatchID stops watching a root.
func (p *Probes) UnwatchID(id uint64) error {
	if err := p.objs.WatchedCgroups.Delete(&id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unwatch cgroup %d: %w", id, err)
	}
	return p.watchedChanged()
}

// watchedChanged raises user space's generation of the watched set, after
// a change: the probes' cached verdicts (the per-CPU hot cache) are recomputed.
func (p *Probes) watchedChanged() error {
	p.genMu.Lock()
	defer p.genMu.Unlock()
	p.gen++
	key, gen := uint32(1), p.gen
	if err := p.objs.WatchGen.Put(&key, &gen); err != nil {
		return fmt.Errorf("watched set generation: %w", err)
	}
	return nil
}

// observe keeps the watched set current as configured roots come and go.
func (p *Probes) observe(ev kernel.Event) {
	c, ok := ev.(*kernel.CgroupEvent)
	if !ok {
		return
	}
	p.mu.Lock()
	isRoot := p.roots[c.Path]
	p.mu.Unlock()
	if !isRoot {
		return
	}
	var err error
	if c.Type == kernel.EventCgroupMkdir {
		// The kernel side already watches it (root_paths); make sure.
		p.log.Info("cgroup root created; watching it", "root", c.Path, "id", c.ID)
		err = p.WatchID(c.ID)
	} else {
		err = p.UnwatchID(c.ID)
	}
	if err != nil {
		p.log.Warn("update watched cgroups", "err", err)
	}
}

// Namespaces are the tracer's namespaces the probes report in.
func (p *Probes) Namespaces() Namespaces { return p.ns }

// Layout is the cgroup layout the probes report ids in.
func (p *Probes) Layout() cgroupfs.Layout { return p.layout }

func (p *Probes) attach() error {
	for name, prog := range map[string]*ebpf.Program{
		"sched_process_exec": p.objs.HandleExec,
		"sched_process_fork": p.objs.HandleFork,
		"sched_process_exit": p.objs.HandleExit,
		"signal_generate":    p.objs.HandleSignalGenerate,
		"signal_deliver":     p.objs.HandleSignalDeliver,
		"cgroup_mkdir":       p.objs.HandleCgroupMkdir,
		"cgroup_rmdir":       p.objs.HandleCgroupRmdir,
	} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return fmt.Errorf("attach tp_btf/%s: %w", name, err)
		}
		p.links = append(p.links, l)
	}
	if err := ensureTracefs(); err != nil {
		return fmt.Errorf("attach tracepoint oom/mark_victim: %w", err)
	}
	l, err := link.Tracepoint("oom", "mark_victim", p.objs.HandleMarkVictim, nil)
	if err != nil {
		return fmt.Errorf("attach tracepoint oom/mark_victim: %w", err)
	}
	p.links = append(p.links, l)
	return nil
}

// ensureTracefs makes sure classic tracepoints can be looked up: tracefs at
// /sys/kernel/tracing (or debugfs), mounting it when we may.
func ensureTracefs() error {
	for _, f := range []string{"/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"} {
		if _, err := os.Stat(f); err == nil {
			return nil
		}
	}
	if err := unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil {
		return fmt.Errorf("tracefs is not mounted at /sys/kernel/tracing and mounting it failed (%w); mount it on the host or give the pod a hostPath for /sys/kernel/tracing", err)
	}
	return nil
}

// Counters sums the per-CPU kernel counters, by event type.
func (p *Probes) Counters() (map[kernel.EventType]kernel.Counter, error) {
	out := make(map[kernel.EventType]kernel.Counter, len(kernel.EventTypes()))
	for _, t := range kernel.EventTypes() {
		var per []event.PodchronEventCounter
		k := uint32(t)
		if err := p.objs.Counters.Lookup(&k, &per); err != nil {
			return nil, fmt.Errorf("read counters for %s: %w", t, err)
		}
		var c kernel.Counter
		for _, x := range per {
			c.Emitted += x.Emitted
			c.Lost += x.Lost
		}
		out[t] = c
	}
	return out, nil
}

// Throttled reads the signal records each cgroup's budget refused since
// load (see Config.SignalRate), by cgroup and record kind: cumulative
// counts, only where there are any. A cgroup whose budget entry was evicted
// (the map is an LRU of 4096 cgroups: idle ones go first) starts again at 0.
func (p *Probes) Throttled() ([]fact.CgroupLoss, error) {
	var (
		out []fact.CgroupLoss
		id  uint64
		b   event.PodchronSignalBudget
	)
	it := p.objs.SignalBudgets.Iterate()
	for it.Next(&id, &b) {
		if b.DroppedGenerate > 0 {
			out = append(out, fact.CgroupLoss{CgroupID: id, Kind: kernel.EventSignalGenerate.String(), Count: b.DroppedGenerate})
		}
		if b.DroppedDeliver > 0 {
			out = append(out, fact.CgroupLoss{CgroupID: id, Kind: kernel.EventSignalDeliver.String(), Count: b.DroppedDeliver})
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read signal budgets: %w", err)
	}
	return out, nil
}

// Close detaches and unloads everything.
func (p *Probes) Close() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	p.links = nil
	errs = append(errs, p.objs.Close())
	return errors.Join(errs...)
}

// selfHostTGID is the tracer's tgid as the programs' is_self() compares it:
// its own in the initial pid namespace, 0 in another one (where tgids the
// programs read are the host's, and nested_skip() asks instead).
func selfHostTGID(self int, ns Namespaces) uint32 {
	if ns.PIDLevel != 0 {
		return 0
	}
	return uint32(self)
}
