package watcher

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: abc
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
`

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRestConfig(t *testing.T) {
	kc := writeKubeconfig(t)
	missing := filepath.Join(t.TempDir(), "nope")

	t.Run("nothing configured", func(t *testing.T) {
		_, err := restConfig("", env(nil))
		if !errors.Is(err, ErrNoAPIServer) {
			t.Fatalf("err = %v, want ErrNoAPIServer", err)
		}
	})
	t.Run("explicit path", func(t *testing.T) {
		cfg, err := restConfig(kc, env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "abc" {
			t.Errorf("cfg = %+v", cfg)
		}
	})
	t.Run("explicit path missing", func(t *testing.T) {
		_, err := restConfig(missing, env(nil))
		if !errors.Is(err, ErrNoAPIServer) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNoAPIServer and fs.ErrNotExist", err)
		}
	})
	t.Run("$KUBECONFIG list", func(t *testing.T) {
		cfg, err := restConfig("", env(map[string]string{"KUBECONFIG": missing + string(filepath.ListSeparator) + kc}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://127.0.0.1:6443" {
			t.Errorf("host = %q", cfg.Host)
		}
	})
	t.Run("$KUBECONFIG missing", func(t *testing.T) {
		_, err := restConfig("", env(map[string]string{"KUBECONFIG": missing}))
		if !errors.Is(err, ErrNoAPIServer) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("in cluster without service account", func(t *testing.T) {
		if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token"); err == nil {
			t.Skip("running in a pod")
		}
		_, err := restConfig("", env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}))
		if !errors.Is(err, ErrNoAPIServer) {
			t.Fatalf("err = %v, want ErrNoAPIServer", err)
		}
	})
	t.Run("empty kubeconfig", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "empty")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := restConfig(p, env(nil))
		if !errors.Is(err, ErrNoAPIServer) {
			t.Fatalf("err = %v, want ErrNoAPIServer", err)
		}
	})
}

func TestNewClient(t *testing.T) {
	cs, err := NewClient(writeKubeconfig(t))
	if err != nil || cs == nil {
		t.Fatalf("NewClient = %v, %v", cs, err)
	}
	if _, err := NewClient(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNoAPIServer) {
		t.Fatalf("err = %v", err)
	}
}
