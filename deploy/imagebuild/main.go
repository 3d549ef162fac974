// Command imagebuild writes podchron's container image as an OCI image
// layout archive, without Docker or a registry, for one or more
// architectures (build-image.sh: linux/amd64 and linux/arm64).
//
// Each -binary is a static tracer (CGO_ENABLED=0); its platform is read
// from the binary itself (the ELF machine, checked against the GOARCH the
// Go toolchain recorded in it). For each one the archive holds an image:
// one uncompressed layer built FROM scratch (nothing from a base image)
// with
//
//	/tracer                                    the binary
//	/etc/passwd, /etc/group                    root, nobody, nonroot
//	/etc/ssl/certs/ca-certificates.crt         the build host's CA bundle (for an https OTLP endpoint)
//	/usr/share/doc/podchron/podchron.spdx.json the SBOM (below)
//
// a config (Entrypoint ["/tracer"], User 0:0, the platform's os and
// architecture) and a manifest. An image index lists the platforms'
// manifests, and index.json names that index with io.containerd.image.name
// and org.opencontainers.image.ref.name, so that
//
//	ctr -n k8s.io images import ARCHIVE
//
// makes the image visible to the kubelet under that name (for the node's
// own platform), and `skopeo copy --multi-arch all oci-archive:ARCHIVE:TAG
// docker://...` pushes every platform.
//
// The SBOM (SPDX 2.3 JSON) is made from the binary's build information,
// what `go version -m` prints: the Go toolchain, the main module, every
// dependency module with its version and go.sum hash, the build settings;
// plus the CA bundle's Debian package (-ca-version) and checksum. It is
// in each image, and attached to each platform's manifest as an OCI
// artifact (artifactType application/spdx+json, subject: the manifest),
// listed in index.json like a registry's referrers.
//
// Entries are ordered and timestamps fixed (-created, default
// $SOURCE_DATE_EPOCH, else 2024-01-01), so the same binaries give the same
// digests.
//
// With -rootfs DIR it writes one binary's root filesystem to DIR instead
// (the Dockerfile's final stage copies it into a FROM scratch image).
//
// Usually run through deploy/build-image.sh.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultImage is the image name deploy/daemonset.yaml refers to.
const DefaultImage = "ghcr.io/podchron/podchron:dev"

// DefaultCABundle is Debian's CA bundle, the path Go's crypto/x509 reads
// first on Linux.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// SBOMPath is where each image carries its SBOM.
const SBOMPath = "/usr/share/doc/podchron/podchron.spdx.json"

// defaultEpoch is the timestamp without $SOURCE_DATE_EPOCH.
var defaultEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// OCI media types.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	MediaTypeEmpty    = "application/vnd.oci.empty.v1+json"
	MediaTypeSPDX     = "application/spdx+json"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string) error {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	var binaries stringsFlag
	fs.Var(&binaries, "binary", "a static tracer binary (CGO_ENABLED=0), one per architecture; repeat for a multi-platform image (default bin/tracer)")
	name := fs.String("name", DefaultImage, "image name (io.containerd.image.name)")
	out := fs.String("out", "bin/podchron-image.tar", "where to write the OCI archive")
	rootfs := fs.String("rootfs", "", "write the root filesystem of the (one) binary's image to this directory instead of an archive")
	ca := fs.String("ca-bundle", DefaultCABundle, "CA bundle copied to "+DefaultCABundle+" in the image (empty: none)")
	caVersion := fs.String("ca-version", "", "version of the Debian ca-certificates package the CA bundle comes from (for the SBOM)")
	version := fs.String("version", "dev", "podchron's version (the org.opencontainers.image.version label, the SBOM)")
	created := fs.String("created", "", "timestamp of the image and SBOM, RFC 3339 (default $SOURCE_DATE_EPOCH, else "+defaultEpoch.Format(time.RFC3339)+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(binaries) == 0 {
		binaries = stringsFlag{"bin/tracer"}
	}
	when, err := creationTime(*created, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	b := Build{Name: *name, Version: *version, Created: when, CABundle: *ca, CAVersion: *caVersion}
	if *rootfs != "" {
		if len(binaries) != 1 {
			return fmt.Errorf("-rootfs takes one -binary, got %d", len(binaries))
		}
		return b.WriteRootFS(binaries[0], *rootfs)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	a, err := b.WriteArchive(binaries, *out)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s\n  name:  %s\n  index: %s\n", *out, *name, a.IndexDigest)
	for _, p := range a.Platforms {
		fmt.Printf("  %s/%s: manifest %s, layer %s (%d bytes), sbom %s (%d Go modules)\n",
			p.OS, p.Architecture, p.ManifestDigest, p.LayerDigest, p.LayerSize, p.SBOMDigest, p.Modules)
	}
	return nil
}

// creationTime is flagValue (RFC 3339), else the SOURCE_DATE_EPOCH value
// (seconds), else defaultEpoch.
func creationTime(flagValue, epoch string) (time.Time, error) {
	switch {
	case flagValue != "":
		t, err := time.Parse(time.RFC3339, flagValue)
		if err != nil {
			return time.Time{}, fmt.Errorf("-created: %w", err)
		}
		return t.UTC(), nil
	case epoch != "":
		s, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", epoch, err)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	return defaultEpoch, nil
}

// Build describes the image to write.
type Build struct {
	Name      string
	Version   string
	Created   time.Time
	CABundle  string // host path; empty: no CA bundle
	CAVersion string // its Debian package's version, for the SBOM
}

// Platform is what was written for one binary.
type Platform struct {
	OS, Architecture string
	ManifestDigest   string
	ManifestSize     int64
	LayerDigest      string
	LayerSize        int64
	SBOMDigest       string
	Modules          int
}

// Archive is what WriteArchive wrote.
type Archive struct {
	IndexDigest string
	Platforms   []Platform
}

// goArch maps an ELF machine to GOARCH (64-bit little-endian Linux only:
// the committed eBPF object is bpfel).
var goArch = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
}

// inspect checks that binary is a static Linux executable of a supported
// architecture and returns that architecture and its build information.
func inspect(binary string) (string, *buildinfo.BuildInfo, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", nil, fmt.Errorf("tracer binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", nil, fmt.Errorf("tracer binary %s is dynamically linked (build it with CGO_ENABLED=0)", binary)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return "", nil, fmt.Errorf("tracer binary %s needs shared libraries %v (build it with CGO_ENABLED=0)", binary, libs)
	} else if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return "", nil, fmt.Errorf("tracer binary %s: %w", binary, err)
	}
	arch, ok := goArch[f.Machine]
	if !ok || f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return "", nil, fmt.Errorf("tracer binary %s: %v %v %v: want amd64 or arm64", binary, f.Machine, f.Class, f.Data)
	}
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "", nil, fmt.Errorf("tracer binary %s: no Go build information: %w", binary, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOARCH"] != arch || settings["GOOS"] != "linux" {
		return "", nil, fmt.Errorf("tracer binary %s: ELF %s but built for GOOS=%s GOARCH=%s", binary, arch, settings["GOOS"], settings["GOARCH"])
	}
	if settings["CGO_ENABLED"] != "0" {
		return "", nil, fmt.Errorf("tracer binary %s: built with CGO_ENABLED=%q, want 0 (the image has no libc)", binary, settings["CGO_ENABLED"])
	}
	return arch, bi, nil
}

// file is one regular file of the layer.
type file struct {
	path string // absolute
	mode int64
	data []byte
}

// files returns the image's files for binary, and the SBOM.
func (b Build) files(binary, arch string, bi *buildinfo.BuildInfo) ([]file, []byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, nil, err
	}
	files := []file{
		{path: "/tracer", mode: 0o755, data: bin},
		// Same users as distroless: root, and nonroot for anyone who
		// rebuilds it for a non-root sidecar.
		{path: "/etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "/etc/group", mode: 0o644, data: []byte("root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n")},
	}
	var ca []byte
	if b.CABundle != "" {
		ca, err = os.ReadFile(b.CABundle)
		if err != nil {
			return nil, nil, fmt.Errorf("CA bundle: %w (pass -ca-bundle '' to build without one)", err)
		}
		files = append(files, file{path: DefaultCABundle, mode: 0o644, data: ca})
	}
	sbom, err := SPDX(SBOMInput{
		Image: b.Name, Version: b.Version, OS: "linux", Arch: arch, Created: b.Created,
		Binary: bin, BuildInfo: bi, CABundle: ca, CAVersion: b.CAVersion,
	})
	if err != nil {
		return nil, nil, err
	}
	files = append(files, file{path: SBOMPath, mode: 0o644, data: sbom})
	return files, sbom, nil
}

// WriteRootFS writes binary's image files under dir.
func (b Build) WriteRootFS(binary, dir string) error {
	arch, bi, err := inspect(binary)
	if err != nil {
		return err
	}
	files, _, err := b.files(binary, arch, bi)
	if err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, os.FileMode(f.mode)); err != nil {
			return err
		}
		if err := os.Chmod(p, os.FileMode(f.mode)); err != nil {
			return err
		}
	}
	fmt.Printf("wrote the linux/%s root filesystem under %s (%d files)\n", arch, dir, len(files))
	return nil
}

// layer returns the layer tar of files: parent directories first, entries
// sorted, fixed owner and timestamps.
func layer(files []file, mtime time.Time) ([]byte, error) {
	dirs := map[string]bool{}
	entries := map[string]*file{}
	for i := range files {
		name := strings.TrimPrefix(path.Clean(files[i].path), "/")
		entries[name] = &files[i]
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var names []string
	for n := range entries {
		names = append(names, n)
	}
	for d := range dirs {
		names = append(names, d)
	}
	slices.Sort(names) // parents before children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		hdr := &tar.Header{Name: n, ModTime: mtime, Format: tar.FormatPAX}
		if f, ok := entries[n]; ok {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, f.mode, int64(len(f.data))
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
			continue
		}
		hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, n+"/"
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Data         []byte            `json:"data,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Platform     *OCIPlatform      `json:"platform,omitempty"`
}

// OCIPlatform is a descriptor's platform.
type OCIPlatform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Manifest is an OCI image manifest (images and artifacts).
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Subject       *Descriptor       `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Index is an OCI image index (index.json too).
type Index struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []Descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// blobs collects the archive's content, by digest.
type blobs struct {
	order []string
	data  map[string][]byte
}

func (bs *blobs) add(mediaType string, b []byte) Descriptor {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if bs.data == nil {
		bs.data = map[string][]byte{}
	}
	if _, ok := bs.data[d]; !ok {
		bs.data[d] = b
		bs.order = append(bs.order, d)
	}
	return Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
}

func (bs *blobs) addJSON(mediaType string, v any) (Descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Descriptor{}, err
	}
	return bs.add(mediaType, b), nil
}

// WriteArchive writes the OCI archive for binaries (one per architecture)
// to dst.
func (b Build) WriteArchive(binaries []string, dst string) (*Archive, error) {
	if b.Name == "" {
		return nil, errors.New("empty image name")
	}
	var bs blobs
	var a Archive
	var manifests, referrers []Descriptor
	created := b.Created.Format(time.RFC3339)
	labels := map[string]string{
		"org.opencontainers.image.title":   "podchron",
		"org.opencontainers.image.source":  "https://github.com/podchron/podchron",
		"org.opencontainers.image.version": b.Version,
		"org.opencontainers.image.created": created,
	}
	seen := map[string]string{}
	for _, bin := range binaries {
		arch, bi, err := inspect(bin)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[arch]; ok {
			return nil, fmt.Errorf("%s and %s are both linux/%s", prev, bin, arch)
		}
		seen[arch] = bin
		files, sbom, err := b.files(bin, arch, bi)
		if err != nil {
			return nil, err
		}
		tarball, err := layer(files, b.Created)
		if err != nil {
			return nil, fmt.Errorf("linux/%s layer: %w", arch, err)
		}
		layerDesc := bs.add(MediaTypeLayer, tarball)
		cfg := map[string]any{
			"created":      created,
			"architecture": arch,
			"os":           "linux",
			"config": map[string]any{
				"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
				"Entrypoint": []string{"/tracer"},
				"User":       "0:0",
				"Labels":     labels,
				"ExposedPorts": map[string]any{
					"9464/tcp": map[string]any{},
				},
			},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
			"history": []map[string]any{{
				"created":    created,
				"created_by": "deploy/imagebuild: FROM scratch; /tracer, /etc/passwd, /etc/group, the CA bundle, " + SBOMPath,
			}},
		}
		cfgDesc, err := bs.addJSON(MediaTypeConfig, cfg)
		if err != nil {
			return nil, err
		}
		m := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, Config: cfgDesc, Layers: []Descriptor{layerDesc},
			Annotations: map[string]string{"org.opencontainers.image.created": created}}
		mDesc, err := bs.addJSON(MediaTypeManifest, m)
		if err != nil {
			return nil, err
		}
		plat := &OCIPlatform{Architecture: arch, OS: "linux"}
		mDesc.Platform = plat
		manifests = append(manifests, mDesc)

		// The SBOM as an artifact whose subject is this platform's manifest.
		empty := bs.add(MediaTypeEmpty, []byte("{}"))
		empty.Data = []byte("{}")
		sbomDesc := bs.add(MediaTypeSPDX, sbom)
		sbomDesc.Annotations = map[string]string{"org.opencontainers.image.title": path.Base(SBOMPath)}
		subject := mDesc
		subject.Platform = nil
		ref := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, ArtifactType: MediaTypeSPDX,
			Config: empty, Layers: []Descriptor{sbomDesc}, Subject: &subject,
			Annotations: map[string]string{"org.opencontainers.image.created": created}}
		refDesc, err := bs.addJSON(MediaTypeManifest, ref)
		if err != nil {
			return nil, err
		}
		refDesc.ArtifactType = MediaTypeSPDX
		refDesc.Annotations = map[string]string{"org.opencontainers.image.created": created, "org.opencontainers.image.description": "SBOM of linux/" + arch}
		referrers = append(referrers, refDesc)

		a.Platforms = append(a.Platforms, Platform{
			OS: "linux", Architecture: arch, ManifestDigest: mDesc.Digest, ManifestSize: mDesc.Size,
			LayerDigest: layerDesc.Digest, LayerSize: layerDesc.Size, SBOMDigest: sbomDesc.Digest,
			Modules: len(bi.Deps) + 1,
		})
	}
	// The platforms in a fixed order, whatever the order of -binary.
	order := func(d Descriptor) string { return d.Platform.Architecture }
	slices.SortFunc(manifests, func(x, y Descriptor) int { return strings.Compare(order(x), order(y)) })
	slices.SortFunc(a.Platforms, func(x, y Platform) int { return strings.Compare(x.Architecture, y.Architecture) })
	slices.SortFunc(referrers, func(x, y Descriptor) int {
		return strings.Compare(x.Annotations["org.opencontainers.image.description"], y.Annotations["org.opencontainers.image.description"])
	})
	idx := Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: manifests,
		Annotations: map[string]string{"org.opencontainers.image.created": created, "org.opencontainers.image.version": b.Version}}
	idxDesc, err := bs.addJSON(MediaTypeIndex, idx)
	if err != nil {
		return nil, err
	}
	a.IndexDigest = idxDesc.Digest
	idxDesc.Annotations = map[string]string{"io.containerd.image.name": b.Name}
	if i := strings.LastIndex(b.Name, ":"); i > strings.LastIndex(b.Name, "/") {
		idxDesc.Annotations["org.opencontainers.image.ref.name"] = b.Name[i+1:]
	}
	top := Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: append([]Descriptor{idxDesc}, referrers...)}
	topJSON, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	if err := writeLayout(dst, &bs, topJSON, b.Created); err != nil {
		return nil, err
	}
	return &a, nil
}

// writeLayout writes the OCI image layout as a tar archive.
func writeLayout(dst string, bs *blobs, indexJSON []byte, mtime time.Time) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".imagebuild-*.tar")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	tw := tar.NewWriter(tmp)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	werr := func() error {
		if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
			return err
		}
		for _, d := range []string{"blobs/", "blobs/sha256/"} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime}); err != nil {
				return err
			}
		}
		sorted := slices.Clone(bs.order)
		slices.Sort(sorted)
		for _, d := range sorted {
			if err := put("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), bs.data[d]); err != nil {
				return err
			}
		}
		if err := put("index.json", indexJSON); err != nil {
			return err
		}
		return tw.Close()
	}()
	if err := errors.Join(werr, tmp.Chmod(0o644), tmp.Close()); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return os.Rename(tmp.Name(), dst)
}
