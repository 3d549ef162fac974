package deploy

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// ociDescriptor, ociManifest and ociIndex: the OCI image layout's JSON, the
// fields checked here.
type ociDescriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType"`
	Annotations  map[string]string `json:"annotations"`
	Platform     *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform"`
}

type ociManifest struct {
	ArtifactType string          `json:"artifactType"`
	Config       ociDescriptor   `json:"config"`
	Layers       []ociDescriptor `json:"layers"`
	Subject      *ociDescriptor  `json:"subject"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

func tarFiles(t *testing.T, r io.Reader) map[string][]byte {
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

func ociBlob(t *testing.T, files map[string][]byte, d ociDescriptor, v any) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok || int64(len(b)) != d.Size {
		t.Fatalf("blob %s missing or not %d bytes", d.Digest, d.Size)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("blob %s: %v", d.Digest, err)
		}
	}
	return b
}

// goModules is what `go version -m` prints of a binary's modules:
// path -> "version sum" of what was built (a replacement's, when replaced).
func goModules(t *testing.T, binary string) (mainPath, goVersion string, deps map[string]string) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	deps = map[string]string{}
	lines := strings.Split(string(out), "\n")
	if f := strings.Fields(lines[0]); len(f) == 2 {
		goVersion = f[1]
	}
	var last string
	for _, l := range lines[1:] {
		f := strings.Split(strings.TrimSpace(l), "\t")
		switch {
		case len(f) >= 2 && f[0] == "mod":
			mainPath = f[1]
		case len(f) >= 3 && f[0] == "dep":
			last = f[1]
			deps[f[1]] = strings.Join(f[2:], " ")
		case len(f) >= 3 && f[0] == "=>":
			delete(deps, last)
			deps[f[1]] = strings.Join(f[2:], " ")
		}
	}
	return mainPath, goVersion, deps
}

// TestBuildImage runs build-image.sh as CI does (no Docker, no registry)
// and checks its archive: an image index with linux/amd64 and linux/arm64,
// each platform's config naming its os and architecture and its /tracer an
// ELF of that machine; in each image, and attached to its manifest, an
// SPDX SBOM listing exactly the modules `go version -m` reports of that
// binary (path, version, go.sum hash), the Go toolchain, and the CA
// bundle's Debian package.
func TestBuildImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not cross-compiling the tracer twice")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	archive := filepath.Join(t.TempDir(), "podchron.tar")
	cmd := exec.Command("bash", "build-image.sh")
	cmd.Env = append(os.Environ(), "OUT="+archive, "VERSION=test", "IMAGE=localhost/podchron/test:1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, out)
	}
	t.Logf("build-image.sh:\n%s", out)
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := tarFiles(t, f)

	var top ociIndex
	if err := json.Unmarshal(files["index.json"], &top); err != nil {
		t.Fatal(err)
	}
	var image ociDescriptor
	sboms := map[string]ociDescriptor{} // subject -> artifact manifest
	for _, d := range top.Manifests {
		switch {
		case d.MediaType == "application/vnd.oci.image.index.v1+json":
			image = d
		case d.ArtifactType == "application/spdx+json":
			var m ociManifest
			ociBlob(t, files, d, &m)
			if m.Subject != nil {
				sboms[m.Subject.Digest] = d
			}
		}
	}
	if image.Annotations["io.containerd.image.name"] != "localhost/podchron/test:1" {
		t.Fatalf("no image index named localhost/podchron/test:1 in index.json: %+v", top)
	}
	var idx ociIndex
	ociBlob(t, files, image, &idx)
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	var platforms []string
	binaries := map[string]string{}
	dpkgCA, _ := exec.Command("dpkg-query", "-W", "-f=${Version}", "ca-certificates").Output()
	for _, d := range idx.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry without platform: %+v", d)
		}
		arch := d.Platform.Architecture
		platforms = append(platforms, d.Platform.OS+"/"+arch)
		var m ociManifest
		ociBlob(t, files, d, &m)
		var cfg struct {
			Architecture string `json:"architecture"`
			OS           string `json:"os"`
		}
		ociBlob(t, files, m.Config, &cfg)
		if cfg.OS != d.Platform.OS || cfg.Architecture != arch {
			t.Errorf("%s: config says %s/%s", arch, cfg.OS, cfg.Architecture)
		}
		if len(m.Layers) != 1 {
			t.Fatalf("%s: %d layers", arch, len(m.Layers))
		}
		layer := tarFiles(t, bytes.NewReader(ociBlob(t, files, m.Layers[0], nil)))
		bin := filepath.Join(t.TempDir(), "tracer-"+arch)
		if err := os.WriteFile(bin, layer["tracer"], 0o755); err != nil {
			t.Fatal(err)
		}
		binaries[arch] = bin
		ef, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: /tracer: %v", arch, err)
		}
		if ef.Machine != machines[arch] {
			t.Errorf("%s: /tracer is an ELF for %v, want %v", arch, ef.Machine, machines[arch])
		}
		ef.Close()

		sbom := layer["usr/share/doc/podchron/podchron.spdx.json"]
		art, ok := sboms[d.Digest]
		if !ok {
			t.Fatalf("%s: no SBOM attached to manifest %s", arch, d.Digest)
		}
		var am ociManifest
		ociBlob(t, files, art, &am)
		if len(am.Layers) != 1 || !bytes.Equal(ociBlob(t, files, am.Layers[0], nil), sbom) {
			t.Errorf("%s: the attached SBOM is not the one in the image", arch)
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				SPDXID      string `json:"SPDXID"`
				Name        string `json:"name"`
				VersionInfo string `json:"versionInfo"`
				Comment     string `json:"comment"`
				Checksums   []struct {
					Algorithm     string `json:"algorithm"`
					ChecksumValue string `json:"checksumValue"`
				} `json:"checksums"`
			} `json:"packages"`
			Relationships []struct {
				A    string `json:"spdxElementId"`
				Type string `json:"relationshipType"`
				B    string `json:"relatedSpdxElement"`
			} `json:"relationships"`
		}
		if err := json.Unmarshal(sbom, &doc); err != nil {
			t.Fatalf("%s: SBOM: %v", arch, err)
		}
		if doc.SPDXVersion != "SPDX-2.3" {
			t.Errorf("%s: spdxVersion %s", arch, doc.SPDXVersion)
		}

		mainPath, goVersion, deps := goModules(t, bin)
		if len(deps) < 20 {
			t.Fatalf("%s: go version -m lists %d modules: %v", arch, len(deps), deps)
		}
		got := map[string]string{}
		dependsOn := map[string]bool{}
		for _, r := range doc.Relationships {
			if r.A == "SPDXRef-podchron" && r.Type == "DEPENDS_ON" {
				dependsOn[r.B] = true
			}
		}
		var sawMain, sawStd, sawCA bool
		for _, p := range doc.Packages {
			switch {
			case p.Name == mainPath:
				sawMain = true
			case p.Name == "stdlib":
				sawStd = p.VersionInfo == goVersion
			case p.Name == "ca-certificates":
				sawCA = p.VersionInfo == strings.TrimSpace(string(dpkgCA))
			case strings.HasPrefix(p.SPDXID, "SPDXRef-gomod-"):
				if !dependsOn[p.SPDXID] {
					t.Errorf("%s: %s is not a dependency of the tracer in the SBOM", arch, p.Name)
				}
				sum := ""
				if len(p.Checksums) == 1 && p.Checksums[0].Algorithm == "SHA256" {
					raw, err := hex.DecodeString(p.Checksums[0].ChecksumValue)
					if err == nil {
						sum = "h1:" + base64.StdEncoding.EncodeToString(raw)
					}
				}
				got[p.Name] = strings.TrimSpace(p.VersionInfo + " " + sum)
				if sum != "" && !strings.Contains(p.Comment, sum) {
					t.Errorf("%s: %s: comment %q lacks the go.sum hash %s", arch, p.Name, p.Comment, sum)
				}
			}
		}
		if !sawMain || !sawStd || !sawCA {
			t.Errorf("%s: SBOM: main module %s %v, stdlib %s %v, ca-certificates %s %v", arch, mainPath, sawMain, goVersion, sawStd,
				dpkgCA, sawCA)
		}
		for p, v := range deps {
			if got[p] != v {
				t.Errorf("%s: go version -m: %s %s; SBOM: %q", arch, p, v, got[p])
			}
		}
		for p, v := range got {
			if _, ok := deps[p]; !ok {
				t.Errorf("%s: SBOM lists %s %s, which go version -m does not", arch, p, v)
			}
		}
		t.Logf("%s: %d modules in the SBOM, as go version -m lists them; stdlib %s", arch, len(got), goVersion)
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
	runForeign(t, binaries)
}

// runForeign runs each image's tracer that this machine can run, natively
// or under qemu-user (Debian: qemu-user; skipped without it): `tracer
// version` names its platform, and `tracer replay` of a recorded stream
// gives the same spans on every architecture (the model is pure Go; the
// probes need a kernel of that architecture, which this does not test).
func runForeign(t *testing.T, binaries map[string]string) {
	recording := "../internal/correlate/testdata/progress/oom-killed.jsonl"
	var want []byte
	var wantArch string
	for _, arch := range []string{"amd64", "arm64"} {
		var prefix []string
		if arch != runtime.GOARCH {
			qemu := map[string]string{"amd64": "qemu-x86_64", "arm64": "qemu-aarch64"}[arch]
			p, err := exec.LookPath(qemu)
			if err != nil {
				t.Logf("%s: not run (no %s; Debian: apt-get install qemu-user)", arch, qemu)
				continue
			}
			prefix = []string{p}
		}
		run := func(args ...string) []byte {
			argv := append(slices.Clone(prefix), binaries[arch])
			argv = append(argv, args...)
			out, err := exec.Command(argv[0], argv[1:]...).Output()
			if err != nil {
				t.Fatalf("%s: %v: %v", arch, argv, err)
			}
			return out
		}
		if v := run("version"); !bytes.Contains(v, []byte("linux/"+arch)) {
			t.Errorf("%s: tracer version = %q", arch, v)
		}
		spans := run("replay", recording, "--output", "json")
		if len(bytes.TrimSpace(spans)) == 0 {
			t.Errorf("%s: replay of %s gave no spans", arch, recording)
		}
		if want == nil {
			want, wantArch = spans, arch
		} else if !bytes.Equal(spans, want) {
			t.Errorf("replay of %s: %s's spans differ from %s's", recording, arch, wantArch)
		}
		t.Logf("%s: ran %v: version and a replay (%d spans)", arch, prefix, bytes.Count(spans, []byte("\n")))
	}
}
