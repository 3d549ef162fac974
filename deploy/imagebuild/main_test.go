package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// staticBinary builds a tiny static Go program for linux/arch.
func staticBinary(t *testing.T, arch string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tracer")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off", "GOOS=linux", "GOARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build a static linux/%s test binary: %v\n%s", arch, err, out)
	}
	return bin
}

// readTar returns the regular files of a tar by name.
func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

func blob(t *testing.T, files map[string][]byte, d Descriptor) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s missing", d.Digest)
	}
	if int64(len(b)) != d.Size {
		t.Fatalf("blob %s: %d bytes, descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestMultiPlatformArchive: one -binary per architecture gives an index
// over both platforms; each platform's config names its os and
// architecture, and its layer's /tracer is that binary (ELF machine
// checked); each image carries its SBOM, also attached as an artifact
// whose subject is that platform's manifest.
func TestMultiPlatformArchive(t *testing.T) {
	bins := map[string]string{"amd64": staticBinary(t, "amd64"), "arm64": staticBinary(t, "arm64")}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "img.tar")
	// arm64 first: the index's order does not depend on the flags'.
	if err := run([]string{"-binary", bins["arm64"], "-binary", bins["amd64"], "-name", "localhost/podchron/test:1", "-out", out,
		"-ca-bundle", ca, "-ca-version", "20230311+deb12u1", "-version", "v9", "-created", "2026-11-24T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := readTar(t, f)
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", files["oci-layout"])
	}

	var top Index
	decode(t, files["index.json"], &top)
	var image *Descriptor
	referrers := map[string]Descriptor{} // subject digest -> referrer
	for i, d := range top.Manifests {
		switch {
		case d.MediaType == MediaTypeIndex:
			if image != nil {
				t.Fatal("two image indexes in index.json")
			}
			image = &top.Manifests[i]
		case d.MediaType == MediaTypeManifest && d.ArtifactType == MediaTypeSPDX:
			var m Manifest
			decode(t, blob(t, files, d), &m)
			if m.Subject == nil {
				t.Fatalf("SBOM artifact %s has no subject", d.Digest)
			}
			referrers[m.Subject.Digest] = d
		default:
			t.Errorf("index.json: unexpected %+v", d)
		}
	}
	if image == nil {
		t.Fatal("index.json has no image index")
	}
	if image.Annotations["io.containerd.image.name"] != "localhost/podchron/test:1" || image.Annotations["org.opencontainers.image.ref.name"] != "1" {
		t.Errorf("image annotations = %v", image.Annotations)
	}
	var idx Index
	decode(t, blob(t, files, *image), &idx)
	var archs []string
	for _, d := range idx.Manifests {
		if d.MediaType != MediaTypeManifest || d.Platform == nil {
			t.Fatalf("index entry %+v", d)
		}
		archs = append(archs, d.Platform.OS+"/"+d.Platform.Architecture)
		arch := d.Platform.Architecture

		var m Manifest
		decode(t, blob(t, files, d), &m)
		var cfg struct {
			Architecture string `json:"architecture"`
			OS           string `json:"os"`
			Config       struct {
				Entrypoint []string
				User       string
				Labels     map[string]string
			} `json:"config"`
			RootFS struct {
				DiffIDs []string `json:"diff_ids"`
			} `json:"rootfs"`
		}
		decode(t, blob(t, files, m.Config), &cfg)
		if cfg.Architecture != arch || cfg.OS != "linux" {
			t.Errorf("%s: config says %s/%s", arch, cfg.OS, cfg.Architecture)
		}
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/tracer"}) || cfg.Config.User != "0:0" || cfg.Config.Labels["org.opencontainers.image.version"] != "v9" {
			t.Errorf("%s: config = %+v", arch, cfg.Config)
		}
		if len(m.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != m.Layers[0].Digest {
			t.Fatalf("%s: layers %+v, diff_ids %v", arch, m.Layers, cfg.RootFS.DiffIDs)
		}
		layer := readTar(t, bytes.NewReader(blob(t, files, m.Layers[0])))
		var names []string
		for n := range layer {
			names = append(names, n)
		}
		slices.Sort(names)
		if want := []string{"etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "tracer", strings.TrimPrefix(SBOMPath, "/")}; !slices.Equal(names, want) {
			t.Errorf("%s: layer files = %v, want %v", arch, names, want)
		}
		want, _ := os.ReadFile(bins[arch])
		if !bytes.Equal(layer["tracer"], want) {
			t.Errorf("%s: /tracer is not the %s binary", arch, arch)
		}
		ef, err := elf.NewFile(bytes.NewReader(layer["tracer"]))
		if err != nil {
			t.Fatal(err)
		}
		if wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; ef.Machine != wantMachine {
			t.Errorf("%s: /tracer is %v, want %v", arch, ef.Machine, wantMachine)
		}

		// The SBOM: in the layer, and attached to this manifest.
		sbom := layer[strings.TrimPrefix(SBOMPath, "/")]
		ref, ok := referrers[d.Digest]
		if !ok {
			t.Fatalf("%s: no SBOM artifact has manifest %s as subject", arch, d.Digest)
		}
		var rm Manifest
		decode(t, blob(t, files, ref), &rm)
		if rm.ArtifactType != MediaTypeSPDX || rm.Config.MediaType != MediaTypeEmpty || string(blob(t, files, rm.Config)) != "{}" ||
			len(rm.Layers) != 1 || rm.Layers[0].MediaType != MediaTypeSPDX {
			t.Errorf("%s: SBOM artifact %+v", arch, rm)
		}
		if !bytes.Equal(blob(t, files, rm.Layers[0]), sbom) {
			t.Errorf("%s: the attached SBOM is not the image's", arch)
		}
		var doc spdxDocument
		decode(t, sbom, &doc)
		if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-11-24T00:00:00Z" || !strings.Contains(doc.Name, "linux/"+arch) {
			t.Errorf("%s: SBOM header %+v", arch, doc)
		}
		pkgs := map[string]spdxPackage{}
		for _, p := range doc.Packages {
			pkgs[p.Name] = p
		}
		bi, err := buildinfo.ReadFile(bins[arch])
		if err != nil {
			t.Fatal(err)
		}
		if p := pkgs["stdlib"]; p.VersionInfo != bi.GoVersion {
			t.Errorf("%s: stdlib %+v, want %s", arch, p, bi.GoVersion)
		}
		if p := pkgs["ca-certificates"]; p.VersionInfo != "20230311+deb12u1" || len(p.Checksums) != 1 || len(p.ExternalRefs) != 1 ||
			p.ExternalRefs[0].ReferenceLocator != "pkg:deb/debian/ca-certificates@20230311%2Bdeb12u1?arch=all" {
			t.Errorf("%s: ca-certificates %+v", arch, p)
		}
		if p := pkgs[bi.Main.Path]; p.VersionInfo != "v9" || p.Checksums[0].ChecksumValue != sha256Hex(want) ||
			!strings.Contains(p.Comment, "GOARCH="+arch) {
			t.Errorf("%s: main package %+v", arch, p)
		}
	}
	if !slices.Equal(archs, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", archs)
	}
	if len(referrers) != 2 {
		t.Errorf("%d SBOM artifacts, want 2", len(referrers))
	}

	// Reproducible: the same inputs give the same bytes.
	again := filepath.Join(t.TempDir(), "again.tar")
	if err := run([]string{"-binary", bins["amd64"], "-binary", bins["arm64"], "-name", "localhost/podchron/test:1", "-out", again,
		"-ca-bundle", ca, "-ca-version", "20230311+deb12u1", "-version", "v9", "-created", "2026-11-24T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same binaries differ")
	}
}

func TestRootFS(t *testing.T) {
	bin := staticBinary(t, "arm64")
	dir := t.TempDir()
	if err := run([]string{"-binary", bin, "-rootfs", dir, "-ca-bundle", ""}); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{"tracer": 0o755, "etc/passwd": 0o644, "etc/group": 0o644, strings.TrimPrefix(SBOMPath, "/"): 0o644} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
	if err := run([]string{"-binary", bin, "-binary", bin, "-rootfs", dir}); err == nil {
		t.Error("-rootfs with two binaries accepted")
	}
}

func TestRefuses(t *testing.T) {
	amd := staticBinary(t, "amd64")
	out := filepath.Join(t.TempDir(), "img.tar")
	if err := run([]string{"-binary", amd, "-binary", amd, "-out", out, "-ca-bundle", ""}); err == nil || !strings.Contains(err.Error(), "both linux/amd64") {
		t.Errorf("two amd64 binaries: %v", err)
	}
	notELF := filepath.Join(t.TempDir(), "tracer")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-binary", notELF, "-out", out, "-ca-bundle", ""}); err == nil {
		t.Error("a shell script accepted")
	}
	for _, p := range []string{"/bin/ls", "/usr/bin/env"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if !dynamic {
			continue
		}
		if _, _, err := inspect(p); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
			t.Errorf("inspect(%s) = %v, want a dynamically linked error", p, err)
		}
		return
	}
	t.Log("no dynamically linked binary found to test with")
}

func TestHelpers(t *testing.T) {
	if got := escapeModulePath("github.com/BurntSushi/toml"); got != "github.com/!burnt!sushi/toml" {
		t.Errorf("escapeModulePath = %s", got)
	}
	if h, ok := h1Hex("h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="); !ok || h != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("h1Hex = %s, %v", h, ok)
	}
	if _, ok := h1Hex("h2:abc"); ok {
		t.Error("h1Hex accepted h2:")
	}
	if got := golangPURL("example.com/m", "v1.0.0+incompatible"); got != "pkg:golang/example.com/m@v1.0.0%2Bincompatible" {
		t.Errorf("golangPURL = %s", got)
	}
	if c, err := creationTime("", "1700000000"); err != nil || c.Unix() != 1700000000 {
		t.Errorf("creationTime from SOURCE_DATE_EPOCH = %v, %v", c, err)
	}
	if c, err := creationTime("", ""); err != nil || !c.Equal(defaultEpoch) {
		t.Errorf("creationTime default = %v, %v", c, err)
	}
}
