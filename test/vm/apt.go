package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Kernels of other Debian releases ("bullseye:linux-image-cloud-amd64") are
// resolved and downloaded through a private apt state per release, under
// <cache>/apt/<release>/: its own sources.list, package lists and package
// cache. The system's apt configuration is never changed. The sources are the
// system's own Debian sources (same mirrors, components and keyrings) with the
// system's release codename replaced by the requested one, so
// "bookworm bookworm-updates" and "bookworm-security" become
// "bullseye bullseye-updates" and "bullseye-security".

// aptSource is one deb source: a URI with its suites and components.
type aptSource struct {
	URI        string
	Suites     []string
	Components []string
	SignedBy   string
}

func (a aptSource) line() string {
	opt := ""
	if a.SignedBy != "" {
		opt = "[signed-by=" + a.SignedBy + "] "
	}
	return fmt.Sprintf("deb %s%s %s %s", opt, a.URI, strings.Join(a.Suites, " "), strings.Join(a.Components, " "))
}

// parseOneLineSources reads the one-line format (sources.list, *.list):
// "deb [opts] URI suite [components...]". Suites are kept one per source.
func parseOneLineSources(data string) []aptSource {
	var out []aptSource
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		var src aptSource
		if strings.HasPrefix(f[0], "[") {
			// Options up to the closing bracket.
			var opts []string
			for len(f) > 0 {
				o := f[0]
				f = f[1:]
				opts = append(opts, strings.Trim(o, "[]"))
				if strings.HasSuffix(o, "]") {
					break
				}
			}
			for _, o := range opts {
				if v, ok := strings.CutPrefix(o, "signed-by="); ok {
					src.SignedBy = v
				}
			}
		}
		if len(f) < 2 {
			continue
		}
		src.URI, src.Suites, src.Components = f[0], []string{f[1]}, f[2:]
		out = append(out, src)
	}
	return out
}

// parseDeb822Sources reads the deb822 format (*.sources).
func parseDeb822Sources(data string) []aptSource {
	var out []aptSource
	flush := func(p map[string]string) {
		if len(p) == 0 {
			return
		}
		if !strings.Contains(" "+p["types"]+" ", " deb ") || strings.EqualFold(p["enabled"], "no") {
			return
		}
		signed := p["signed-by"]
		if strings.ContainsAny(signed, " \n") { // an inline key, not a keyring path
			signed = ""
		}
		for _, u := range strings.Fields(p["uris"]) {
			out = append(out, aptSource{URI: u, Suites: strings.Fields(p["suites"]),
				Components: strings.Fields(p["components"]), SignedBy: signed})
		}
	}
	p := map[string]string{}
	last := ""
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.TrimSpace(l) == "":
			flush(p)
			p, last = map[string]string{}, ""
		case (l[0] == ' ' || l[0] == '\t') && last != "":
			p[last] += "\n" + strings.TrimSpace(l)
		default:
			k, v, ok := strings.Cut(l, ":")
			if ok {
				last = strings.ToLower(strings.TrimSpace(k))
				p[last] = strings.TrimSpace(v)
			}
		}
	}
	flush(p)
	return out
}

// systemAptSources returns the enabled deb sources of an apt configuration
// directory (sources.list and sources.list.d/*.list, *.sources).
func systemAptSources(etc string) ([]aptSource, error) {
	var out []aptSource
	if b, err := os.ReadFile(filepath.Join(etc, "sources.list")); err == nil {
		out = append(out, parseOneLineSources(string(b))...)
	}
	parts, _ := filepath.Glob(filepath.Join(etc, "sources.list.d", "*"))
	sort.Strings(parts)
	for _, f := range parts {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(f, ".list"):
			out = append(out, parseOneLineSources(string(b))...)
		case strings.HasSuffix(f, ".sources"):
			out = append(out, parseDeb822Sources(string(b))...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no deb sources in %s", etc)
	}
	return out, nil
}

// osCodename reads VERSION_CODENAME from an os-release file.
func osCodename(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VERSION_CODENAME="); ok {
			if v = strings.Trim(v, `"'`); v != "" {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("%s has no VERSION_CODENAME", path)
}

// sourcesForRelease rewrites the system's sources of release `from` to
// release `to`: every suite "from" or "from-<x>" becomes "to" or "to-<x>";
// sources for other releases (third-party repositories) are dropped.
func sourcesForRelease(sys []aptSource, from, to string) []string {
	var lines []string
	seen := map[string]bool{}
	for _, s := range sys {
		var suites []string
		for _, su := range s.Suites {
			if su == from || strings.HasPrefix(su, from+"-") {
				suites = append(suites, to+strings.TrimPrefix(su, from))
			}
		}
		if len(suites) == 0 || len(s.Components) == 0 {
			continue
		}
		s.Suites = suites
		if l := s.line(); !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	return lines
}

// aptOptions returns the apt-get/apt-cache options that make apt use the
// private state of a release ("" for the system's own apt), preparing that
// state and updating its package lists once per run.
func (s *kernelStore) aptOptions(suite string) ([]string, error) {
	if suite == "" {
		return nil, nil
	}
	etc := s.AptEtc
	if etc == "" {
		etc = "/etc/apt"
	}
	osr := s.OSRelease
	if osr == "" {
		osr = "/etc/os-release"
	}
	dir := filepath.Join(s.CacheDir, "apt", suite)
	list := filepath.Join(dir, "sources.list")
	opts := []string{
		"-o", "Dir::Etc::sourcelist=" + list,
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
	}
	if s.updated[suite] {
		return opts, nil
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	codename, err := osCodename(osr)
	if err != nil {
		return nil, fmt.Errorf("kernel from release %s: cannot tell this system's release to derive its sources from: %w", suite, err)
	}
	sys, err := systemAptSources(etc)
	if err != nil {
		return nil, fmt.Errorf("kernel from release %s: %w", suite, err)
	}
	lines := sourcesForRelease(sys, codename, suite)
	if len(lines) == 0 {
		return nil, fmt.Errorf("kernel from release %s: no source for this system's release %s in %s to derive it from", suite, codename, etc)
	}
	content := "# Written by podchron's test/vm runner: this system's " + codename + " sources, for " + suite + ".\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(list, []byte(content), 0o644); err != nil {
		return nil, err
	}
	s.Log("apt sources for %s (private, %s):\n  %s", suite, list, strings.Join(lines, "\n  "))
	cmd := exec.Command("apt-get", append(opts, "-q", "-o", "APT::Sandbox::User=root", "-o", "Acquire::Languages=none", "update")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		// Offline: the lists of an earlier run (if any) still resolve.
		s.Log("WARNING: apt-get update for %s failed (%v); using the lists of an earlier run, if any\n%s", suite, err, lastLines(string(out), 5))
	}
	if s.updated == nil {
		s.updated = map[string]bool{}
	}
	s.updated[suite] = true
	return opts, nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
