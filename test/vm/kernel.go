package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// kernel is a bootable kernel image plus, when known, its modules tree and
// build config.
type kernel struct {
	Entry      string // the kernels.txt line it came from
	Label      string // human readable, e.g. linux-image-6.1.0-56-cloud-amd64_6.1.192-2
	Image      string // bzImage / vmlinuz on the host
	Release    string // uname -r, if known
	ModulesDir string // .../lib/modules/<release>, "" if unknown
	Config     string // path of the build config, "" if unknown
}

// parseKernelList reads kernels.txt: one entry per line, '#' starts a
// comment, blank lines are ignored. An entry is a Debian package name,
// optionally prefixed with the Debian release to take it from
// ("bullseye:linux-image-cloud-amd64"), or an absolute path to a kernel image.
func parseKernelList(data string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.ContainsAny(l, " \t") {
			return nil, fmt.Errorf("line %d: one kernel per line, got %q", n, l)
		}
		if !filepath.IsAbs(l) {
			suite, pkg := splitSuite(l)
			if !debPackageRE.MatchString(pkg) || (strings.Contains(l, ":") && !suiteRE.MatchString(suite)) {
				return nil, fmt.Errorf("line %d: %q is neither an absolute path nor a Debian package name ([release:]package)", n, l)
			}
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

var (
	debPackageRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	suiteRE      = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// splitSuite splits "release:package" ("" release for a plain package).
func splitSuite(entry string) (suite, pkg string) {
	if s, p, ok := strings.Cut(entry, ":"); ok {
		return s, p
	}
	return "", entry
}

// kernelStore resolves kernels.txt entries, downloading Debian packages into
// a cache directory.
type kernelStore struct {
	CacheDir string
	Log      func(format string, a ...any)

	// AptEtc is the system's apt configuration directory the private
	// sources of other releases are derived from (default /etc/apt), and
	// OSRelease the os-release file naming the system's release.
	AptEtc    string
	OSRelease string
	updated   map[string]bool // releases whose private lists were updated in this run
}

func (s *kernelStore) resolve(entry string) (*kernel, error) {
	if filepath.IsAbs(entry) {
		return s.localKernel(entry)
	}
	return s.debKernel(entry)
}

func (s *kernelStore) localKernel(p string) (*kernel, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	k := &kernel{Entry: p, Label: filepath.Base(p), Image: p}
	// Debian-style layout next to the image: /boot/vmlinuz-R, /boot/config-R,
	// /lib/modules/R.
	base := filepath.Base(p)
	if strings.HasPrefix(base, "vmlinuz-") {
		rel := strings.TrimPrefix(base, "vmlinuz-")
		k.Release = rel
		if c := filepath.Join(filepath.Dir(p), "config-"+rel); fileExists(c) {
			k.Config = c
		}
		for _, m := range []string{
			filepath.Join(filepath.Dir(p), "..", "lib", "modules", rel),
			filepath.Join("/lib/modules", rel),
		} {
			if fileExists(m) {
				k.ModulesDir = filepath.Clean(m)
				break
			}
		}
	}
	if k.Config == "" {
		if c := filepath.Join(filepath.Dir(p), ".config"); fileExists(c) {
			k.Config = c
		}
	}
	return k, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// debKernel resolves a Debian package name (a metapackage such as
// linux-image-cloud-amd64 or a versioned linux-image-6.1.0-NN-cloud-amd64)
// to the versioned image package, then downloads and unpacks it into the
// cache unless that exact version is already there.
func (s *kernelStore) debKernel(entry string) (*kernel, error) {
	suite, name := splitSuite(entry)
	apt, err := s.aptOptions(suite)
	if err != nil {
		return nil, err
	}
	pkg, ver, err := s.resolveDeb(apt, name)
	resolveFile := filepath.Join(s.CacheDir, "resolved", safeName(entry))
	if err != nil {
		// Offline or no apt lists: reuse what the last successful
		// resolution recorded, if it is still cached.
		b, rerr := os.ReadFile(resolveFile)
		f := strings.Fields(string(b))
		if rerr != nil || len(f) != 2 || !fileExists(filepath.Join(s.CacheDir, "debs", f[0]+"_"+f[1], ".complete")) {
			return nil, fmt.Errorf("resolving %s: %w (is `apt-get update` done?)", entry, err)
		}
		s.Log("WARNING: could not resolve %s with apt (%v); using cached %s %s", entry, err, f[0], f[1])
		pkg, ver = f[0], f[1]
	}
	dir := filepath.Join(s.CacheDir, "debs", pkg+"_"+ver)
	if !fileExists(filepath.Join(dir, ".complete")) {
		if err := s.fetchDeb(apt, pkg, ver, dir); err != nil {
			return nil, err
		}
	} else {
		s.Log("using cached %s %s (%s)", pkg, ver, dir)
	}
	if err := os.MkdirAll(filepath.Dir(resolveFile), 0o755); err == nil {
		// The entry moved to a new version (e.g. a security update): drop
		// the unpacked tree of the version it resolved to before.
		if b, err := os.ReadFile(resolveFile); err == nil {
			if f := strings.Fields(string(b)); len(f) == 2 && f[0]+"_"+f[1] != pkg+"_"+ver {
				old := filepath.Join(s.CacheDir, "debs", f[0]+"_"+f[1])
				if fileExists(old) {
					s.Log("removing %s, superseded by %s %s", old, pkg, ver)
					_ = os.RemoveAll(old)
				}
			}
		}
		_ = os.WriteFile(resolveFile, []byte(pkg+" "+ver+"\n"), 0o644)
	}
	imgs, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(imgs) != 1 {
		return nil, fmt.Errorf("%s: expected one boot/vmlinuz-* in %s, found %d", pkg, dir, len(imgs))
	}
	rel := strings.TrimPrefix(filepath.Base(imgs[0]), "vmlinuz-")
	k := &kernel{Entry: entry, Label: pkg + "_" + ver, Image: imgs[0], Release: rel}
	if c := filepath.Join(dir, "boot", "config-"+rel); fileExists(c) {
		k.Config = c
	}
	for _, m := range []string{filepath.Join(dir, "lib", "modules", rel), filepath.Join(dir, "usr", "lib", "modules", rel)} {
		if fileExists(m) {
			k.ModulesDir = m
			break
		}
	}
	return k, nil
}

// resolveDeb follows "Depends: linux-image-*" from metapackages down to the
// package that ships the image, and returns it with its candidate version.
func (s *kernelStore) resolveDeb(apt []string, name string) (pkg, ver string, err error) {
	pkg = name
	for i := 0; i < 5; i++ {
		out, err := exec.Command("apt-cache", append(apt, "depends", "--important", pkg)...).CombinedOutput()
		if err != nil {
			return "", "", fmt.Errorf("apt-cache depends %s: %w: %s", pkg, err, bytes.TrimSpace(out))
		}
		next := imageDependency(string(out))
		if next == "" {
			break
		}
		pkg = next
	}
	out, err := exec.Command("apt-cache", append(apt, "policy", pkg)...).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("apt-cache policy %s: %w: %s", pkg, err, bytes.TrimSpace(out))
	}
	ver = candidateVersion(string(out))
	if ver == "" {
		return "", "", fmt.Errorf("apt-cache policy %s: no candidate version", pkg)
	}
	return pkg, ver, nil
}

// imageDependency returns the first linux-image-* package a metapackage
// depends on, or "" (the package itself ships the image).
func imageDependency(aptCacheDepends string) string {
	sc := bufio.NewScanner(strings.NewReader(aptCacheDepends))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		l = strings.TrimPrefix(l, "|")
		if !strings.HasPrefix(l, "Depends:") {
			continue
		}
		dep := strings.TrimSpace(strings.TrimPrefix(l, "Depends:"))
		if strings.HasPrefix(dep, "linux-image-") && !strings.HasPrefix(dep, "<") {
			return dep
		}
	}
	return ""
}

func candidateVersion(aptCachePolicy string) string {
	sc := bufio.NewScanner(strings.NewReader(aptCachePolicy))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(l, "Candidate:"); ok {
			v = strings.TrimSpace(v)
			if v == "(none)" {
				return ""
			}
			return v
		}
	}
	return ""
}

func (s *kernelStore) fetchDeb(apt []string, pkg, ver, dir string) error {
	start := time.Now()
	if err := os.MkdirAll(s.CacheDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.CacheDir, ".fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	s.Log("downloading %s=%s with apt-get download ...", pkg, ver)
	// Sandbox user root: the cache dir is usually not readable by _apt.
	cmd := exec.Command("apt-get", append(apt, "download", "-q", "-o", "APT::Sandbox::User=root", pkg+"="+ver)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get download %s=%s: %w (run `apt-get update`?)\n%s", pkg, ver, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download %s=%s: expected one .deb, found %d", pkg, ver, len(debs))
	}
	x := filepath.Join(tmp, "x")
	if out, err := exec.Command("dpkg", "-x", debs[0], x).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg -x %s: %w\n%s", debs[0], err, out)
	}
	if err := os.WriteFile(filepath.Join(x, ".complete"), []byte(filepath.Base(debs[0])+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(x, dir); err != nil {
		return err
	}
	s.Log("fetched and unpacked %s in %s", filepath.Base(debs[0]), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// parseKconfig returns CONFIG_X -> "y"/"m"/value ("n" for "is not set").
func parseKconfig(data string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "# CONFIG_") && strings.HasSuffix(l, " is not set") {
			m[strings.TrimSuffix(strings.TrimPrefix(l, "# "), " is not set")] = "n"
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
}

// requiredKconfig lists options the runner and the probes need built in.
var requiredKconfig = []struct{ opt, why string }{
	{"CONFIG_BLK_DEV_INITRD", "boot from the initramfs"},
	{"CONFIG_RD_GZIP", "gzip-compressed initramfs"},
	{"CONFIG_DEVTMPFS", "/dev"},
	{"CONFIG_SERIAL_8250_CONSOLE", "console=ttyS0"},
	{"CONFIG_BPF_SYSCALL", "bpf(2)"},
	{"CONFIG_DEBUG_INFO_BTF", "/sys/kernel/btf/vmlinux, tp_btf, CO-RE"},
	{"CONFIG_BPF_EVENTS", "BPF programs on tracepoints"},
	{"CONFIG_TRACING", "tracefs"},
	{"CONFIG_CGROUPS", "cgroup2"},
	{"CONFIG_CGROUP_BPF", "cgroup BPF hooks"},
	{"CONFIG_BINFMT_SCRIPT", "/init is a shell script"},
}

// checkKconfig returns problems (missing or modular options).
func checkKconfig(cfg map[string]string) []string {
	var probs []string
	for _, r := range requiredKconfig {
		switch v := cfg[r.opt]; v {
		case "y":
		case "m":
			probs = append(probs, fmt.Sprintf("%s=m (needed built in for %s)", r.opt, r.why))
		case "":
			probs = append(probs, fmt.Sprintf("%s not set (needed for %s)", r.opt, r.why))
		default:
			if v == "n" {
				probs = append(probs, fmt.Sprintf("%s is not set (needed for %s)", r.opt, r.why))
			}
		}
	}
	return probs
}

// moduleSet resolves module names to .ko files under a modules tree,
// including their dependencies (read from each module's .modinfo
// "depends=" field, so no modules.dep / depmod is needed), in load order.
func moduleSet(modulesDir string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if modulesDir == "" {
		return nil, fmt.Errorf("modules %v requested but this kernel has no modules tree", names)
	}
	index := map[string]string{} // normalized name -> path relative to modulesDir
	err := filepath.WalkDir(filepath.Join(modulesDir, "kernel"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(modulesDir, p)
		switch name := d.Name(); {
		case strings.HasSuffix(name, ".ko"):
			index[normModName(strings.TrimSuffix(name, ".ko"))] = rel
		case strings.HasSuffix(name, ".ko.xz"):
			// Debian's 6.12 kernel ships xz-compressed modules; a plain
			// .ko next to one (decompressed by an earlier run) wins.
			if n := normModName(strings.TrimSuffix(name, ".ko.xz")); index[n] == "" {
				index[n] = rel
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	builtin := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(modulesDir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			builtin[normModName(strings.TrimSuffix(filepath.Base(l), ".ko"))] = true
		}
	}
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string) error
	visit = func(n string) error {
		n = normModName(n)
		switch state[n] {
		case 1:
			return fmt.Errorf("module dependency cycle at %s", n)
		case 2:
			return nil
		}
		rel, ok := index[n]
		if !ok {
			if builtin[n] {
				state[n] = 2
				return nil
			}
			return fmt.Errorf("module %s not found under %s", n, modulesDir)
		}
		state[n] = 1
		if strings.HasSuffix(rel, ".xz") {
			plain, err := unxzModule(modulesDir, rel)
			if err != nil {
				return err
			}
			rel = plain
		}
		deps, err := moduleDepends(filepath.Join(modulesDir, rel))
		if err != nil {
			return err
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[n] = 2
		order = append(order, rel)
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// unxzModule decompresses an xz-compressed module (rel, relative to
// modulesDir) next to itself, once, with xz(1) (Debian's xz-utils, always
// installed): busybox insmod and the .modinfo reader want plain ELF. It
// returns the decompressed module's relative path.
func unxzModule(modulesDir, rel string) (string, error) {
	plain := strings.TrimSuffix(rel, ".xz")
	dst := filepath.Join(modulesDir, plain)
	if _, err := os.Stat(dst); err == nil {
		return plain, nil
	}
	out, err := exec.Command("xz", "-dc", filepath.Join(modulesDir, rel)).Output()
	if err != nil {
		return "", fmt.Errorf("decompress module %s (xz -dc; apt-get install xz-utils): %w", rel, err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return plain, nil
}

func normModName(n string) string { return strings.ReplaceAll(n, "-", "_") }

func moduleDepends(ko string) ([]string, error) {
	f, err := elf.Open(ko)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d = strings.TrimSpace(d); d != "" {
					deps = append(deps, d)
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}
