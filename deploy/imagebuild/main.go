// Command imagebuild writes podchron's container image as an OCI image
// layout archive, without Docker or a registry: one uncompressed layer
// holding the static tracer binary (as /tracer), the CA bundle (for an
// https OTLP endpoint) and a minimal /etc/passwd and /etc/group; a config
// with Entrypoint ["/tracer"] and User 0:0; and an index.json whose
// manifest carries io.containerd.image.name, so that
//
//	ctr -n k8s.io images import ARCHIVE
//
// makes the image visible to the kubelet under that name. The archive
// writer is the one the containerd test harness uses
// (test/harness/containerd): entries are ordered and timestamps fixed, so
// the same binary gives the same digests.
//
// The image is for the architecture imagebuild runs on (the harness writes
// runtime.GOARCH into the config and index); build multi-arch images with
// the Dockerfile and docker buildx.
//
// Usually run through deploy/build-image.sh.
package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podchron/podchron/test/harness/containerd"
)

// DefaultImage is the image name deploy/daemonset.yaml refers to.
const DefaultImage = "ghcr.io/podchron/podchron:dev"

// DefaultCABundle is Debian's CA bundle, the path Go's crypto/x509 reads
// first on Linux.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	binary := fs.String("binary", "bin/tracer", "the static tracer binary (CGO_ENABLED=0)")
	name := fs.String("name", DefaultImage, "image name (io.containerd.image.name)")
	out := fs.String("out", "bin/podchron-image.tar", "where to write the OCI archive")
	ca := fs.String("ca-bundle", DefaultCABundle, "CA bundle copied to "+DefaultCABundle+" in the image (empty: none)")
	version := fs.String("version", "dev", "value of the org.opencontainers.image.version label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	img, err := Spec(*binary, *name, *ca, *version)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	a, err := containerd.BuildImageArchive(img, *out)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\n  name:     %s\n  manifest: %s\n  config:   %s\n  layer:    %s (%d bytes)\n",
		a.Path, a.Name, a.ManifestDigest, a.ConfigDigest, a.LayerDigest, a.LayerSize)
	return nil
}

// Spec describes the image for the static binary at binary.
func Spec(binary, name, caBundle, version string) (containerd.Image, error) {
	if err := checkStatic(binary); err != nil {
		return containerd.Image{}, err
	}
	files := []containerd.File{
		{Path: "/tracer", HostPath: binary, Mode: 0o755},
		// Same users as distroless: root, and nonroot for anyone who
		// rebuilds it for a non-root sidecar.
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n")},
	}
	if caBundle != "" {
		if _, err := os.Stat(caBundle); err != nil {
			return containerd.Image{}, fmt.Errorf("CA bundle: %w (pass -ca-bundle '' to build without one)", err)
		}
		files = append(files, containerd.File{Path: DefaultCABundle, HostPath: caBundle, Mode: 0o644})
	}
	return containerd.Image{
		Name:       name,
		NoBusybox:  true,
		Entrypoint: []string{"/tracer"},
		User:       "0:0",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "podchron",
			"org.opencontainers.image.source":  "https://github.com/podchron/podchron",
			"org.opencontainers.image.version": version,
		},
		Files: files,
	}, nil
}

// checkStatic refuses a dynamically linked binary: the image has no libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("tracer binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("tracer binary %s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Errorf("tracer binary %s needs shared libraries %v (build it with CGO_ENABLED=0)", path, libs)
	} else if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return fmt.Errorf("tracer binary %s: %w", path, err)
	}
	return nil
}
