package containerd

import (
	"strings"
	"testing"
)

func TestContainerdMajor(t *testing.T) {
	for v, want := range map[string]int{
		"containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u1": 1,
		"containerd github.com/containerd/containerd/v2 v2.4.2 module-proxy":          2,
		"containerd containerd.io 1.7.27 05044ec0":                                    1,
	} {
		got, err := containerdMajor(v)
		if err != nil || got != want {
			t.Errorf("containerdMajor(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	if _, err := containerdMajor("containerd"); err == nil {
		t.Error("no version: want an error")
	}
}

// The config of each major version names the CRI plugins that version
// reads (1.6: io.containerd.grpc.v1.cri with sandbox_image; 2.x: the
// io.containerd.cri.v1.runtime / .images split with pinned_images), and not
// the other's.
func TestContainerdConfigVersions(t *testing.T) {
	h := &Harness{RuntimeDir: "/rt", Socket: "/rt/containerd.sock", PauseImage: "localhost/pause:1",
		Runtime: Runtime{Binary: "/usr/bin/crun"}, cfg: Config{LogLevel: "info"}}
	v2, v3 := h.containerdConfig(1), h.containerdConfig(2)
	for _, c := range []struct {
		cfg, want, not string
	}{
		{v2, "version = 2\n", `"io.containerd.cri.v1.runtime"`},
		{v2, `sandbox_image = "localhost/pause:1"`, "pinned_images"},
		{v3, "version = 3\n", "sandbox_image"},
		{v3, `[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]`, `grpc.v1.cri".containerd`},
		{v3, `sandbox = "localhost/pause:1"`, "bin_dir ="},
	} {
		if !strings.Contains(c.cfg, c.want) || strings.Contains(c.cfg, c.not) {
			t.Errorf("config wants %q and not %q:\n%s", c.want, c.not, c.cfg)
		}
	}
	for _, c := range []string{v2, v3} {
		for _, w := range []string{`BinaryName = "/usr/bin/crun"`, `root = "/rt/root"`, "restrict_oom_score_adj = true", "SystemdCgroup = false"} {
			if !strings.Contains(c, w) {
				t.Errorf("config lacks %q:\n%s", w, c)
			}
		}
	}
}
