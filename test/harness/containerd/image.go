package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// BusyboxPath is the static busybox copied into images.
const BusyboxPath = "/bin/busybox"

// PauseScript is the pause image's PID 1: it handles TERM/INT (exit 0) so
// StopPodSandbox is quick, and otherwise sleeps forever.
const PauseScript = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

// Default image names (as seen by CRI).
const (
	PauseImageName   = "localhost/podchron-e2e/pause:3.9"
	BusyboxImageName = "localhost/podchron-e2e/busybox:latest"
)

// imageEpoch is the fixed mtime of every layer entry, so identical inputs
// give identical digests.
var imageEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// File is an extra file (or directory/symlink) put into an image layer.
type File struct {
	// Path inside the image, absolute ("/usr/local/bin/podchron").
	Path string
	// Mode permission bits (default 0644, or 0755 when HostPath is
	// executable, 0755 for directories).
	Mode fs.FileMode
	// Exactly one of Data, HostPath, Symlink, Dir.
	Data     []byte
	HostPath string // copy the content of this host file
	Symlink  string // create a symlink pointing to this target
	Dir      bool   // create a directory
}

// Image describes an OCI image built without Docker or a registry.
type Image struct {
	// Name as CRI will see it, e.g. "localhost/podchron/podchron:e2e".
	// It is stored in the index annotation io.containerd.image.name.
	Name string
	// NoBusybox leaves out the busybox base (/bin/busybox, applet links,
	// /etc/passwd, /etc/group, /tmp): the layer then holds only Files.
	NoBusybox  bool
	Entrypoint []string
	Cmd        []string
	Env        []string // "K=V"; PATH is added when missing
	WorkingDir string
	User       string
	Labels     map[string]string
	// StopSignal is the image's STOPSIGNAL (e.g. "SIGQUIT"): the signal the
	// runtime stops its containers with. Empty: the default, SIGTERM.
	StopSignal string
	Files      []File
}

// PauseImage is the sandbox (pause) image.
func PauseImage() Image {
	return Image{Name: PauseImageName, Entrypoint: []string{"/bin/sh", "-c", PauseScript}}
}

// BusyboxImage is the general workload image.
func BusyboxImage() Image {
	return Image{Name: BusyboxImageName, Cmd: []string{"/bin/sh"}}
}

// ImageArchive is the result of BuildImageArchive.
type ImageArchive struct {
	Path           string
	Name           string
	ManifestDigest string
	ConfigDigest   string
	LayerDigest    string
	LayerSize      int64
}

// OCI media types.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// BuildImageArchive writes an OCI image layout archive (tar) for img to
// dst: one uncompressed layer, a config, a manifest and an index.json whose
// manifest carries io.containerd.image.name. Layer entries are written in a
// deterministic order with fixed timestamps. The result can be imported
// with `ctr images import`.
func BuildImageArchive(img Image, dst string) (*ImageArchive, error) {
	if img.Name == "" {
		return nil, errors.New("image: empty name")
	}
	layerFile, err := os.CreateTemp(filepath.Dir(dst), ".layer-*.tar")
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.Name, err)
	}
	defer func() {
		_ = layerFile.Close()
		_ = os.Remove(layerFile.Name())
	}()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(layerFile, h)}
	if err := writeLayer(cw, img); err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", img.Name, err)
	}
	layerDigest := digestOf(h)
	layerSize := cw.n

	env := slices.Clone(img.Env)
	if !slices.ContainsFunc(env, func(s string) bool { return strings.HasPrefix(s, "PATH=") }) {
		env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	}
	config := map[string]any{
		"Env":        env,
		"Entrypoint": img.Entrypoint,
		"Cmd":        img.Cmd,
		"WorkingDir": img.WorkingDir,
		"User":       img.User,
		"Labels":     img.Labels,
	}
	if img.StopSignal != "" {
		config["StopSignal"] = img.StopSignal
	}
	cfg := map[string]any{
		"created":      imageEpoch.Format(time.RFC3339),
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       config,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		"history": []map[string]any{{
			"created":    imageEpoch.Format(time.RFC3339),
			"created_by": "podchron test harness",
		}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", img.Name, err)
	}
	cfgDigest := digestBytes(cfgJSON)
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeManifest,
		"config":        descriptor{MediaType: mediaTypeConfig, Digest: cfgDigest, Size: int64(len(cfgJSON))},
		"layers":        []descriptor{{MediaType: mediaTypeLayer, Digest: layerDigest, Size: layerSize}},
	}
	manJSON, err := json.Marshal(manifest)
	if err != nil {
		return nil, fmt.Errorf("image %s: manifest: %w", img.Name, err)
	}
	manDigest := digestBytes(manJSON)
	annotations := map[string]string{"io.containerd.image.name": img.Name}
	if i := strings.LastIndex(img.Name, ":"); i > strings.LastIndex(img.Name, "/") {
		annotations["org.opencontainers.image.ref.name"] = img.Name[i+1:]
	}
	index := map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeIndex,
		"manifests": []descriptor{{
			MediaType: mediaTypeManifest, Digest: manDigest, Size: int64(len(manJSON)),
			Annotations: annotations,
			Platform:    &platform{Architecture: runtime.GOARCH, OS: "linux"},
		}},
	}
	idxJSON, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("image %s: index: %w", img.Name, err)
	}

	out, err := os.Create(dst)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.Name, err)
	}
	tw := tar.NewWriter(out)
	werr := func() error {
		if err := tarBytes(tw, "oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
			return err
		}
		for _, d := range []string{"blobs/", "blobs/sha256/"} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: imageEpoch}); err != nil {
				return err
			}
		}
		if err := tarBytes(tw, blobPath(cfgDigest), cfgJSON); err != nil {
			return err
		}
		if err := tarBytes(tw, blobPath(manDigest), manJSON); err != nil {
			return err
		}
		if _, err := layerFile.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: blobPath(layerDigest), Mode: 0o644, Size: layerSize, ModTime: imageEpoch}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, layerFile); err != nil {
			return err
		}
		if err := tarBytes(tw, "index.json", idxJSON); err != nil {
			return err
		}
		return tw.Close()
	}()
	cerr := out.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(dst)
		return nil, fmt.Errorf("image %s: archive: %w", img.Name, err)
	}
	return &ImageArchive{
		Path: dst, Name: img.Name, ManifestDigest: manDigest, ConfigDigest: cfgDigest,
		LayerDigest: layerDigest, LayerSize: layerSize,
	}, nil
}

// ImportImageArchive imports an archive into containerd's k8s.io namespace
// with `ctr images import` (unpacking it for the default snapshotter).
func ImportImageArchive(ctx context.Context, socket, archive string) error {
	cmd := exec.CommandContext(ctx, "ctr", "-a", socket, "-n", "k8s.io", "images", "import", archive)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, bytes.TrimSpace(outb))
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

func digestBytes(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func blobPath(digest string) string {
	return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

func tarBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: imageEpoch}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// layerEntry is one entry of the layer, before writing.
type layerEntry struct {
	name     string // relative, no leading slash
	dir      bool
	symlink  string
	data     []byte
	hostPath string
	mode     fs.FileMode
}

func writeLayer(w io.Writer, img Image) error {
	entries := map[string]layerEntry{}
	addDir := func(p string, mode fs.FileMode) {
		for d := p; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			if e, ok := entries[d]; ok && e.dir {
				continue
			}
			m := fs.FileMode(0o755)
			if d == p && mode != 0 {
				m = mode
			}
			entries[d] = layerEntry{name: d, dir: true, mode: m}
		}
	}
	add := func(e layerEntry) {
		addDir(path.Dir(e.name), 0)
		if e.dir {
			addDir(e.name, e.mode)
			return
		}
		entries[e.name] = e
	}

	if !img.NoBusybox {
		applets, err := busyboxApplets()
		if err != nil {
			return err
		}
		for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "root", "proc", "sys", "dev", "var", "run"} {
			addDir(d, 0o755)
		}
		addDir("tmp", 0o1777|fs.ModeSticky)
		add(layerEntry{name: "bin/busybox", hostPath: BusyboxPath, mode: 0o755})
		for _, a := range applets {
			if a == "bin/busybox" {
				continue
			}
			add(layerEntry{name: a, symlink: "/bin/busybox", mode: 0o777})
		}
		add(layerEntry{name: "etc/passwd", data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"), mode: 0o644})
		add(layerEntry{name: "etc/group", data: []byte("root:x:0:\nnogroup:x:65534:\n"), mode: 0o644})
	}
	for _, f := range img.Files {
		name := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if name == "" {
			return fmt.Errorf("file %q: bad path", f.Path)
		}
		e := layerEntry{name: name, mode: f.Mode.Perm() | (f.Mode & (fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid))}
		switch {
		case f.Dir:
			e.dir = true
			if e.mode == 0 {
				e.mode = 0o755
			}
		case f.Symlink != "":
			e.symlink = f.Symlink
			e.mode = 0o777
		case f.HostPath != "":
			e.hostPath = f.HostPath
			if e.mode == 0 {
				fi, err := os.Stat(f.HostPath)
				if err != nil {
					return fmt.Errorf("file %q: %w", f.Path, err)
				}
				e.mode = 0o644
				if fi.Mode()&0o111 != 0 {
					e.mode = 0o755
				}
			}
		default:
			e.data = f.Data
			if e.mode == 0 {
				e.mode = 0o644
			}
		}
		add(e)
	}

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names) // parents sort before children
	tw := tar.NewWriter(w)
	for _, n := range names {
		if err := writeEntry(tw, entries[n]); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return tw.Close()
}

func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	return mode
}

func writeEntry(tw *tar.Writer, e layerEntry) error {
	hdr := &tar.Header{Name: e.name, Mode: tarMode(e.mode), ModTime: imageEpoch, Format: tar.FormatPAX}
	switch {
	case e.dir:
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
		return tw.WriteHeader(hdr)
	case e.symlink != "":
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = e.symlink
		return tw.WriteHeader(hdr)
	case e.hostPath != "":
		f, err := os.Open(e.hostPath)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", e.hostPath)
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fi.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		n, err := io.Copy(tw, f)
		if err != nil {
			return err
		}
		if n != fi.Size() {
			return fmt.Errorf("%s changed size while copying", e.hostPath)
		}
		return nil
	default:
		hdr.Typeflag = tar.TypeReg
		hdr.Size = int64(len(e.data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
}

// busyboxApplets returns the applet install paths ("bin/sh", "usr/bin/awk").
func busyboxApplets() ([]string, error) {
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", BusyboxPath, err)
	}
	var applets []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || !strings.Contains(l, "/") { // skip "linuxrc"
			continue
		}
		applets = append(applets, l)
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list-full: no applets", BusyboxPath)
	}
	return applets, nil
}
