package otlp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePEM writes a self-signed certificate and its key as PEM files in
// dir, and a file that is not PEM.
func writePEM(t *testing.T, dir string) (certPath, keyPath, junkPath, otherKeyPath string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	key := newKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podchron-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		data := b
		if typ != "" {
			data = pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return write("cert.pem", "CERTIFICATE", der), write("key.pem", "EC PRIVATE KEY", keyDER(key)),
		write("junk.pem", "", []byte("not a certificate\n")), write("other-key.pem", "EC PRIVATE KEY", keyDER(newKey()))
}

// TestValidateEnvSettings: each malformed setting fails ValidateEnv with
// an error naming the variable (and, for files and plain settings, the
// bad value); header values never appear in the error.
func TestValidateEnvSettings(t *testing.T) {
	cert, key, junk, otherKey := writePEM(t, t.TempDir())
	missing := filepath.Join(t.TempDir(), "absent.pem")
	const secret = "s3cr3t-token"
	type env = map[string]string
	for _, tc := range []struct {
		name    string
		env     env
		wantErr []string // all must appear; empty: valid
	}{
		{"headers ok", env{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20" + secret + ", x-tenant = a%2Cb ,api-key="}, nil},
		{"headers no '='", env{"OTEL_EXPORTER_OTLP_HEADERS": "x-a=1,Authorization Bearer " + secret}, []string{"OTEL_EXPORTER_OTLP_HEADERS", "pair 2", "no '='"}},
		{"headers empty key", env{"OTEL_EXPORTER_OTLP_HEADERS": "=" + secret}, []string{"OTEL_EXPORTER_OTLP_HEADERS", "pair 1", "empty key"}},
		{"headers empty pair", env{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,,b=2"}, []string{"pair 2 is empty"}},
		{"headers bad key", env{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x auth=" + secret}, []string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", `"x auth"`, "header name"}},
		{"headers bad escape", env{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=" + secret + "%zz"}, []string{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=***", "URL encoding"}},
		{"headers control", env{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=" + secret + "%0D%0AX-Evil:1"}, []string{"Authorization=***", "control character"}},
		{"ca ok", env{"OTEL_EXPORTER_OTLP_CERTIFICATE": cert}, nil},
		{"ca missing", env{"OTEL_EXPORTER_OTLP_CERTIFICATE": missing}, []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", missing, "no such file"}},
		{"ca not pem", env{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": junk}, []string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", junk, "no PEM certificate"}},
		{"client ok", env{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": cert, "OTEL_EXPORTER_OTLP_CLIENT_KEY": key}, nil},
		{"client cert alone", env{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": cert}, []string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE is set but OTEL_EXPORTER_OTLP_CLIENT_KEY is not"}},
		{"client key alone", env{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": key}, []string{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY is set but OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE is not"}},
		{"client key missing", env{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": cert, "OTEL_EXPORTER_OTLP_CLIENT_KEY": missing}, []string{"OTEL_EXPORTER_OTLP_CLIENT_KEY", missing}},
		{"client cert junk", env{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": junk, "OTEL_EXPORTER_OTLP_CLIENT_KEY": key}, []string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", junk, "not a PEM certificate"}},
		{"client key mismatch", env{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": cert, "OTEL_EXPORTER_OTLP_CLIENT_KEY": otherKey}, []string{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "matching key"}},
		{"timeout ok", env{"OTEL_EXPORTER_OTLP_TIMEOUT": "10000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0"}, nil},
		{"timeout unit", env{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, []string{"OTEL_EXPORTER_OTLP_TIMEOUT", `"10s"`, "milliseconds"}},
		{"timeout negative", env{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-5"}, []string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", `"-5"`}},
		{"compression ok", env{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"}, nil},
		{"compression bad", env{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, []string{"OTEL_EXPORTER_OTLP_COMPRESSION", `"zstd"`, "gzip or none"}},
		{"insecure ok", env{"OTEL_EXPORTER_OTLP_INSECURE": "TRUE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false"}, nil},
		{"insecure bad", env{"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "yes"}, []string{"OTEL_EXPORTER_OTLP_TRACES_INSECURE", `"yes"`, "true or false"}},
		{"protocol bad", env{EnvTracesProtocol: "thrift"}, []string{EnvTracesProtocol, `"thrift"`, "unsupported"}},
		{"endpoint bad", env{EnvEndpoint: "http//collector"}, []string{EnvEndpoint, "http//collector"}},
		{"resource bad", env{"OTEL_RESOURCE_ATTRIBUTES": "k8s.cluster.name"}, []string{"OTEL_RESOURCE_ATTRIBUTES"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for _, k := range []string{"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
				t.Setenv(envPrefix+k, "")
				t.Setenv(envTracesPrefix+k, "")
			}
			t.Setenv(EnvEndpoint, "http://127.0.0.1:4317")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := ValidateEnv()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the header value", err)
			}
		})
	}
}
