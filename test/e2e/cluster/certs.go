package cluster

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pki makes the cluster's certificates with openssl: one CA, and a key pair
// per client or server, signed by it.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p pki) openssl(args ...string) error {
	cmd := exec.Command("openssl", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("openssl %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (p pki) ca() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("pki dir: %w", err)
	}
	return p.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
		"-subj", "/CN=podchron-e2e-ca", "-keyout", p.path("ca.key"), "-out", p.path("ca.crt"),
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
}

// cert makes <name>.crt and <name>.key for subject cn/org, with the given
// DNS and IP SANs (server certs) or none (client certs).
func (p pki) cert(name, cn, org string, dnsSANs, ipSANs []string) error {
	subj := "/CN=" + cn
	if org != "" {
		subj = "/O=" + org + subj
	}
	csr := p.path(name + ".csr")
	if err := p.openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subj,
		"-keyout", p.path(name+".key"), "-out", csr); err != nil {
		return err
	}
	ext := "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
	if len(dnsSANs)+len(ipSANs) > 0 {
		var sans []string
		for _, d := range dnsSANs {
			sans = append(sans, "DNS:"+d)
		}
		for _, ip := range ipSANs {
			sans = append(sans, "IP:"+ip)
		}
		ext += "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=" + strings.Join(sans, ",") + "\n"
	} else {
		ext += "extendedKeyUsage=clientAuth\n"
	}
	extFile := p.path(name + ".ext")
	if err := os.WriteFile(extFile, []byte(ext), 0o600); err != nil {
		return fmt.Errorf("cert extensions: %w", err)
	}
	defer os.Remove(extFile)
	defer os.Remove(csr)
	return p.openssl("x509", "-req", "-in", csr, "-CA", p.path("ca.crt"), "-CAkey", p.path("ca.key"),
		"-CAcreateserial", "-days", "2", "-extfile", extFile, "-out", p.path(name+".crt"))
}

// ControlPlanePKI makes in dir what a loopback control plane of another
// harness (test/scale) needs, the way Start does: a CA (ca.crt/key), the API
// server's serving cert (apiserver.crt/key), an admin client cert in
// system:masters (admin.crt/key), the service-account key pair (sa.key/pub)
// and the admin kubeconfig for server, whose path it returns.
func ControlPlanePKI(dir, server string) (string, error) {
	p := pki{dir: dir}
	if err := p.ca(); err != nil {
		return "", err
	}
	if err := p.cert("apiserver", "kube-apiserver", "", []string{"kubernetes", "kubernetes.default", "localhost"},
		[]string{"127.0.0.1", "10.96.0.1"}); err != nil {
		return "", err
	}
	if err := p.cert("admin", "admin", "system:masters", nil, nil); err != nil {
		return "", err
	}
	if err := p.serviceAccountKeys(); err != nil {
		return "", err
	}
	return p.kubeconfig("admin", server)
}

// serviceAccountKeys makes sa.key and sa.pub, which the API server signs
// and checks service-account tokens with.
func (p pki) serviceAccountKeys() error {
	if err := p.openssl("genrsa", "-out", p.path("sa.key"), "2048"); err != nil {
		return err
	}
	return p.openssl("rsa", "-in", p.path("sa.key"), "-pubout", "-out", p.path("sa.pub"))
}

// kubeconfig writes a kubeconfig for the client cert <name> to <dir>/<name>.kubeconfig.
func (p pki) kubeconfig(name, server string) (string, error) {
	read := func(f string) (string, error) {
		b, err := os.ReadFile(p.path(f))
		if err != nil {
			return "", fmt.Errorf("kubeconfig %s: %w", name, err)
		}
		return base64.StdEncoding.EncodeToString(b), nil
	}
	ca, err := read("ca.crt")
	if err != nil {
		return "", err
	}
	crt, err := read(name + ".crt")
	if err != nil {
		return "", err
	}
	key, err := read(name + ".key")
	if err != nil {
		return "", err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: %s}
current-context: e2e
`, server, ca, name, crt, key, name)
	path := p.path(name + ".kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", name, err)
	}
	return path, nil
}
