package main

import (
	"archive/tar"
	"debug/elf"
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

// staticBinary builds a tiny static Go program.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tracer")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build a static test binary: %v\n%s", err, out)
	}
	return bin
}

// readArchive returns the files of an OCI archive (a tar) by name.
func readArchive(t *testing.T, r io.Reader) map[string][]byte {
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

func blob(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s missing", digest)
	}
	return b
}

func TestArchive(t *testing.T) {
	bin := staticBinary(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "img.tar")
	if err := run([]string{"-binary", bin, "-name", "localhost/podchron/test:1", "-out", out, "-ca-bundle", ca, "-version", "v9"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := readArchive(t, f)

	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
			Platform    struct {
				Architecture string `json:"architecture"`
				OS           string `json:"os"`
			} `json:"platform"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index: %d manifests", len(index.Manifests))
	}
	m := index.Manifests[0]
	if m.Annotations["io.containerd.image.name"] != "localhost/podchron/test:1" {
		t.Errorf("index annotations = %v", m.Annotations)
	}
	if m.Platform.OS != "linux" || m.Platform.Architecture != runtime.GOARCH {
		t.Errorf("platform = %+v", m.Platform)
	}
	var manifest struct {
		Config struct{ Digest string }   `json:"config"`
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(blob(t, files, m.Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Config struct {
			Entrypoint []string
			User       string
			Labels     map[string]string
		} `json:"config"`
	}
	if err := json.Unmarshal(blob(t, files, manifest.Config.Digest), &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/tracer"}) || cfg.Config.User != "0:0" {
		t.Errorf("config = %+v", cfg.Config)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] != "v9" {
		t.Errorf("labels = %v", cfg.Config.Labels)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	layer := readArchive(t, strings.NewReader(string(blob(t, files, manifest.Layers[0].Digest))))
	var names []string
	for n := range layer {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "tracer"}; !slices.Equal(names, want) {
		t.Errorf("layer files = %v, want %v", names, want)
	}
	want, _ := os.ReadFile(bin)
	if string(layer["tracer"]) != string(want) {
		t.Error("/tracer differs from the binary")
	}
}

func TestRefusesDynamicBinary(t *testing.T) {
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
		if _, err := Spec(p, "x:1", "", "dev"); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
			t.Errorf("Spec(%s) = %v, want a dynamically linked error", p, err)
		}
		return
	}
	t.Skip("no dynamically linked binary found to test with")
}
