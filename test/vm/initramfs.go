package main

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Mode bits used in cpio newc headers (same values as the stat(2) st_mode).
const (
	modeDir  = 0o040000
	modeReg  = 0o100000
	modeLink = 0o120000
	modeChr  = 0o020000
)

// cpioEntry is one member of a newc archive. Exactly one of data (regular
// file), linkTarget (symlink) or a directory/device mode is meaningful.
type cpioEntry struct {
	name       string // archive path without leading slash
	mode       uint32 // type and permission bits
	data       []byte // for regular files
	hostPath   string // for regular files: read lazily from this host path
	linkTarget string // for symlinks
	rdevMajor  uint32 // for device nodes
	rdevMinor  uint32
}

// archive is an in-memory list of initramfs members keyed by path, so that
// parent directories are created once and later additions can be checked
// for conflicts.
type archive struct {
	entries map[string]*cpioEntry
}

func newArchive() *archive {
	return &archive{entries: map[string]*cpioEntry{}}
}

func cleanArchivePath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

// mkdirAll adds p and all of its parents as directories (0755) unless they
// already exist. It fails if a non-directory is in the way.
func (a *archive) mkdirAll(p string) error {
	p = cleanArchivePath(p)
	if p == "" {
		return nil
	}
	if e, ok := a.entries[p]; ok {
		if e.mode&0o170000 != modeDir {
			return fmt.Errorf("initramfs: %s exists and is not a directory", p)
		}
		return nil
	}
	if err := a.mkdirAll(path.Dir(p)); err != nil {
		return err
	}
	a.entries[p] = &cpioEntry{name: p, mode: modeDir | 0o755}
	return nil
}

func (a *archive) add(e *cpioEntry) error {
	e.name = cleanArchivePath(e.name)
	if e.name == "" {
		return fmt.Errorf("initramfs: empty path")
	}
	if old, ok := a.entries[e.name]; ok {
		if old.mode&0o170000 == modeDir && e.mode&0o170000 == modeDir {
			return nil
		}
		return fmt.Errorf("initramfs: duplicate entry %s", e.name)
	}
	if err := a.mkdirAll(path.Dir(e.name)); err != nil {
		return err
	}
	a.entries[e.name] = e
	return nil
}

func (a *archive) addDir(p string, perm uint32) error {
	if err := a.mkdirAll(p); err != nil {
		return err
	}
	a.entries[cleanArchivePath(p)].mode = modeDir | perm
	return nil
}

func (a *archive) addBytes(p string, perm uint32, data []byte) error {
	return a.add(&cpioEntry{name: p, mode: modeReg | perm, data: data})
}

// addHostFile copies a host file (following symlinks) to archive path p,
// keeping its permission bits.
func (a *archive) addHostFile(p, hostPath string) error {
	st, err := os.Stat(hostPath)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("initramfs: %s is not a regular file", hostPath)
	}
	if old, ok := a.entries[cleanArchivePath(p)]; ok && old.hostPath == hostPath {
		return nil // same file requested twice (e.g. a shared library)
	}
	return a.add(&cpioEntry{name: p, mode: modeReg | uint32(st.Mode().Perm()), hostPath: hostPath})
}

func (a *archive) addSymlink(p, target string) error {
	return a.add(&cpioEntry{name: p, mode: modeLink | 0o777, linkTarget: target})
}

func (a *archive) addCharDev(p string, perm, major, minor uint32) error {
	return a.add(&cpioEntry{name: p, mode: modeChr | perm, rdevMajor: major, rdevMinor: minor})
}

func (a *archive) has(p string) bool {
	_, ok := a.entries[cleanArchivePath(p)]
	return ok
}

// writeTo writes the archive as cpio "newc", sorted by path so parents come
// before children and the output is reproducible (mtime 0, uid/gid 0).
func (a *archive) writeTo(w io.Writer) error {
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, n := range names {
		e := a.entries[n]
		var data []byte
		switch e.mode & 0o170000 {
		case modeReg:
			data = e.data
			if e.hostPath != "" {
				b, err := os.ReadFile(e.hostPath)
				if err != nil {
					return err
				}
				data = b
			}
		case modeLink:
			data = []byte(e.linkTarget)
		}
		nlink := uint32(1)
		if e.mode&0o170000 == modeDir {
			nlink = 2
		}
		if err := writeCpioRecord(w, ino, e.mode, nlink, e.rdevMajor, e.rdevMinor, n, data); err != nil {
			return err
		}
		ino++
	}
	return writeCpioRecord(w, 0, 0, 1, 0, 0, "TRAILER!!!", nil)
}

func writeCpioRecord(w io.Writer, ino, mode, nlink, rmaj, rmin uint32, name string, data []byte) error {
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmaj, rmin, len(name)+1, 0)
	var buf bytes.Buffer
	buf.WriteString(hdr)
	buf.WriteString(name)
	buf.WriteByte(0)
	for buf.Len()%4 != 0 {
		buf.WriteByte(0)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if pad := (4 - len(data)%4) % 4; pad > 0 {
		if _, err := w.Write(make([]byte, pad)); err != nil {
			return err
		}
	}
	return nil
}

// writeGzip writes the archive gzip-compressed to file out.
func (a *archive) writeGzip(out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := a.writeTo(zw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// addBusybox adds the static busybox binary as /bin/busybox plus one symlink
// per applet, using the binary's own `--list-full` output.
func (a *archive) addBusybox(hostBusybox string) error {
	if err := requireStatic(hostBusybox); err != nil {
		return fmt.Errorf("busybox %s: %w (install Debian's busybox-static)", hostBusybox, err)
	}
	if err := a.addHostFile("bin/busybox", hostBusybox); err != nil {
		return err
	}
	out, err := exec.Command(hostBusybox, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("%s --list-full: %w", hostBusybox, err)
	}
	for _, l := range strings.Fields(string(out)) {
		l = cleanArchivePath(l)
		if l == "bin/busybox" || a.has(l) {
			continue
		}
		if err := a.addSymlink(l, "/bin/busybox"); err != nil {
			return err
		}
	}
	if !a.has("bin/sh") {
		return fmt.Errorf("busybox %s has no sh applet", hostBusybox)
	}
	return nil
}

func requireStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("is dynamically linked")
		}
	}
	return nil
}

// libSearchDirs is where the dynamic loader looks without an ld.so.cache on
// Debian amd64 (multiarch dirs first).
var libSearchDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// addHostFileWithDeps adds a host file at the same absolute path in the
// archive. If it is a dynamically linked ELF executable, its interpreter and
// all DT_NEEDED libraries (recursively) are added at their host paths too.
func (a *archive) addHostFileWithDeps(dst, src string) ([]string, error) {
	if err := a.addHostFile(dst, src); err != nil {
		return nil, err
	}
	var added []string
	seen := map[string]bool{}
	var walk func(p string, rpath []string) error
	walk = func(p string, rpath []string) error {
		f, err := elf.Open(p)
		if err != nil {
			return nil // not an ELF file (script, data): nothing to resolve
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: reading PT_INTERP: %w", p, err)
			}
			interp := strings.TrimRight(string(b), "\x00")
			if !seen[interp] {
				seen[interp] = true
				if err := a.addHostFile(interp, interp); err != nil {
					return fmt.Errorf("%s: interpreter: %w", p, err)
				}
				added = append(added, interp)
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return nil
		}
		var runpath []string
		for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
			if v, err := f.DynString(tag); err == nil {
				for _, s := range v {
					for _, d := range strings.Split(s, ":") {
						d = strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(p))
						runpath = append(runpath, d)
					}
				}
			}
		}
		dirs := append(append(append([]string{}, runpath...), rpath...), libSearchDirs...)
		for _, lib := range libs {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			found := ""
			for _, d := range dirs {
				c := filepath.Join(d, lib)
				if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
					found = c
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s: shared library %s not found on the host", p, lib)
			}
			if err := a.addHostFile(found, found); err != nil {
				return err
			}
			added = append(added, found)
			if err := walk(found, runpath); err != nil {
				return err
			}
		}
		return nil
	}
	return added, walk(src, nil)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// guestTest is one test binary to run inside the guest.
type guestTest struct {
	Name   string // short name, e.g. "probe"
	Binary string // path inside the guest
	Dir    string // working directory inside the guest (package dir)
}

type initConfig struct {
	Nonce   string
	Tests   []guestTest
	Args    []string // passed to every test binary after -test.v
	Modules []string // guest paths of .ko files, in load order
	Env     []string // extra KEY=VALUE
	// SwitchRoot copies the initramfs into a tmpfs and switch_roots into
	// it first, so / is a mount of its own as on a real node: pivot_root(2),
	// which runc uses to enter a container's root, refuses the initramfs
	// rootfs (it has no parent mount).
	SwitchRoot bool
	// Systemd makes the host's systemd PID 1 in place of busybox init; it
	// starts the run script as guestUnitName. runc's systemd cgroup driver
	// needs it: it asks systemd, over its private bus socket, for a scope
	// per container and a slice per pod, so the cgroups are systemd's.
	Systemd bool
}

// guestSwitchedMarker is the file /init leaves in the tmpfs root it
// switched to, so the /init run again there goes on with the mounts.
const guestSwitchedMarker = "/.podchron-vm-switched-root"

// markers printed by /init; the nonce makes them impossible to produce by
// accident (e.g. a test that echoes a log).
func initMarker(nonce string) string   { return "PODCHRON-VM-INIT[" + nonce + "]" }
func resultMarker(nonce string) string { return "PODCHRON-VM-RESULT[" + nonce + "]" }
func exitMarker(nonce string) string   { return "PODCHRON-VM-EXIT[" + nonce + "]=" }

// Guest paths of the generated scripts.
const (
	guestRunScript = "/etc/podchron-vm/run"
	guestInittab   = "/etc/inittab"
)

// The unit systemd starts in place of default.target (-systemd): the run
// script, on the console, with no dependency on units the guest lacks
// (DefaultDependencies=no). The run script powers the guest off itself.
const (
	guestUnitName = "podchron-vm.service"
	guestUnitPath = "/etc/systemd/system/" + guestUnitName
	guestUnit     = "[Unit]\nDescription=podchron VM tests\nDefaultDependencies=no\n\n" +
		"[Service]\nType=oneshot\nExecStart=" + guestRunScript + "\n" +
		"StandardInput=null\nStandardOutput=tty\nStandardError=tty\nTTYPath=/dev/console\nTTYReset=no\nTTYVHangup=no\n"
	guestSystemd = "/lib/systemd/systemd"
)

// systemdExtra is what -systemd copies from the host: systemd, with its
// shared libraries (libsystemd-shared through its RUNPATH), and systemctl.
var systemdExtra = []string{guestSystemd, "/usr/bin/systemctl"}

// inittab makes busybox init (PID 1, which reaps orphans like systemd does)
// run the test script once on the console.
const inittab = "::sysinit:" + guestRunScript + "\n"

// initScripts renders /init, which mounts the filesystems and execs
// busybox init, and the run script, which runs the tests, prints the exit
// marker and powers off. Both are busybox sh scripts.
func initScripts(c initConfig) (initSh, runSh string) {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	env := func() {
		w("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
		w("export HOME=/root TMPDIR=/tmp PODCHRON_VM=1")
		for _, e := range c.Env {
			w("export %s", shellQuote(e))
		}
	}
	w("#!/bin/sh")
	w("# generated by test/vm (podchron VM test runner): mounts, then busybox init runs " + guestRunScript)
	env()
	w(`mnt() { mkdir -p "$4"; mount -t "$1" -o "$3" "$2" "$4" || echo "podchron-vm: WARNING: mount -t $1 $4 failed"; }`)
	if c.SwitchRoot {
		w("if [ ! -e %s ]; then", guestSwitchedMarker)
		w("  mkdir -p /newroot && mount -t tmpfs -o mode=0755,size=90%% rootfs /newroot || echo 'podchron-vm: WARNING: tmpfs for the new root failed'")
		w("  for f in /*; do case $f in /newroot|/proc|/sys) ;; *) cp -a \"$f\" /newroot/ ;; esac; done")
		w("  mkdir -p /newroot/proc /newroot/sys && : >/newroot%s", guestSwitchedMarker)
		w("  exec switch_root /newroot /init")
		w(`  echo "podchron-vm: switch_root failed; going on in the initramfs"`)
		w("fi")
	}
	w("mount -t proc -o nosuid,nodev,noexec proc /proc")
	w("read up _ </proc/uptime")
	w(`echo "%s uptime=${up}s kernel=$(uname -r)"`, initMarker(c.Nonce))
	w("mnt sysfs sysfs nosuid,nodev,noexec /sys")
	w("mnt devtmpfs devtmpfs mode=0755,nosuid /dev")
	w("mnt devpts devpts gid=5,mode=620,ptmxmode=666 /dev/pts")
	w("mnt tmpfs shm nosuid,nodev,mode=1777 /dev/shm")
	w("mnt tmpfs tmpfs nosuid,nodev,mode=1777 /tmp")
	w("mnt tmpfs tmpfs nosuid,nodev,mode=0755 /run")
	w("mnt securityfs securityfs nosuid,nodev,noexec /sys/kernel/security")
	w("mnt debugfs debugfs nosuid,nodev,noexec /sys/kernel/debug")
	w("mnt tracefs tracefs nosuid,nodev,noexec /sys/kernel/tracing")
	w("mnt bpf bpffs nosuid,nodev,noexec,mode=700 /sys/fs/bpf")
	// Pure cgroup v2, mounted like systemd does on a Kubernetes node, with
	// every controller enabled for the children of the root.
	w("mnt cgroup2 cgroup2 nosuid,nodev,noexec,nsdelegate,memory_recursiveprot /sys/fs/cgroup")
	w(`for c in $(cat /sys/fs/cgroup/cgroup.controllers); do echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done`)
	// A first memory cgroup turns on the kernel's memcg static keys (kmem
	// accounting), a live patch of hot allocator text. Done here, while
	// only this script runs, rather than in the middle of a test: under
	// multi-threaded TCG, a patch made while another vCPU allocates can
	// leave it a stale int3 (see int3RE in qemu.go), an emulator race.
	w("mkdir /sys/fs/cgroup/podchron-vm-warm 2>/dev/null && rmdir /sys/fs/cgroup/podchron-vm-warm")
	w("mkdir -p /run/netns /var/lib /etc/cni/net.d /root")
	w("ln -sf /proc/self/mounts /etc/mtab")
	w("ip link set lo up 2>/dev/null")
	w("hostname podchron-vm")
	if c.Systemd {
		// systemd mounts what it lacks itself and keeps the mounts above.
		w("exec %s --unit=%s --log-target=console --log-level=notice --show-status=false", guestSystemd, guestUnitName)
		w(`echo "podchron-vm: exec systemd failed; busybox init instead"`)
	}
	w("exec /bin/busybox init")
	w(`echo "podchron-vm: exec busybox init failed"`)
	w(guestRunScript)
	initSh = b.String()

	b.Reset()
	w("#!/bin/sh")
	w("# generated by test/vm (podchron VM test runner)")
	env()
	for _, m := range c.Modules {
		w(`insmod %s || echo "podchron-vm: WARNING: insmod %s failed"`, shellQuote(m), m)
	}
	if len(c.Modules) > 0 {
		w(`echo "podchron-vm: loaded modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"`)
	}
	w(`echo "podchron-vm: cgroup controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"`)
	w("status=0")
	args := []string{"-test.v"}
	args = append(args, c.Args...)
	var qa []string
	for _, a := range args {
		qa = append(qa, shellQuote(a))
	}
	for _, t := range c.Tests {
		w(`echo "podchron-vm: running %s in %s"`, t.Binary, t.Dir)
		w("cd %s || cd /", shellQuote(t.Dir))
		w("%s %s", shellQuote(t.Binary), strings.Join(qa, " "))
		w("rc=$?")
		w("cd /")
		w(`echo "%s %s rc=$rc"`, resultMarker(c.Nonce), t.Name)
		w(`[ "$rc" -ne 0 ] && [ "$status" -eq 0 ] && status=$rc`)
	}
	w(`read up _ </proc/uptime`)
	w(`echo "podchron-vm: done, guest uptime ${up}s"`)
	w(`echo "%s$status"`, exitMarker(c.Nonce))
	w("sync")
	w("poweroff -f")
	w("sleep 5")
	w("echo o >/proc/sysrq-trigger")
	return initSh, b.String()
}
