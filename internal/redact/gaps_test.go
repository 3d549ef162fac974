package redact

import (
	"reflect"
	"testing"
)

// gapCases: the secrets issue 20 found passing unmasked, one row each,
// and command lines that must come out as they went in (want nil).
var gapCases = []struct {
	name     string
	in, want []string
}{
	{"header -H", []string{"curl", "-sS", "-H", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "https://api.example.com/v1/orders"},
		[]string{"curl", "-sS", "-H", "Authorization: ***", "https://api.example.com/v1/orders"}},
	{"header basic with =", []string{"curl", "-H", "Authorization: Basic YWRtaW46cHc=", "https://api.example.com/"},
		[]string{"curl", "-H", "Authorization: ***", "https://api.example.com/"}},
	{"header --header=", []string{"wget", "--header=Authorization: Bearer abc.def.ghi", "-O-", "https://api.example.com/v1/export"},
		[]string{"wget", "--header=Authorization: ***", "-O-", "https://api.example.com/v1/export"}},
	{"header x-api-key", []string{"curl", "-H", "X-Api-Key: 0123456789abcdef", "https://api.example.com/"},
		[]string{"curl", "-H", "X-Api-Key: ***", "https://api.example.com/"}},
	{"sshpass -p", []string{"sshpass", "-p", "hunter2", "ssh", "-o", "StrictHostKeyChecking=no", "backup@10.0.0.5"},
		[]string{"sshpass", "-p", "***", "ssh", "-o", "StrictHostKeyChecking=no", "backup@10.0.0.5"}},
	{"docker login -p", []string{"docker", "login", "-u", "ci", "-p", "dckr_pat_x", "registry.example.com"},
		[]string{"docker", "login", "-u", "ci", "-p", "***", "registry.example.com"}},
	{"redis-cli -a", []string{"redis-cli", "-h", "redis", "-a", "s3cr3t", "PING"},
		[]string{"redis-cli", "-h", "redis", "-a", "***", "PING"}},
	{"curl -u", []string{"curl", "-fsS", "-u", "admin:pw", "http://localhost:9200/_cluster/health"},
		[]string{"curl", "-fsS", "-u", "admin:***", "http://localhost:9200/_cluster/health"}},
	{"curl --user=", []string{"curl", "--user=admin:pw", "http://localhost:9200/"},
		[]string{"curl", "--user=admin:***", "http://localhost:9200/"}},
	{"url password with /", []string{"psql", "postgres://app:pa/ss@db:5432/shop"},
		[]string{"psql", "postgres://app:***@db:5432/shop"}},
	{"url password with #", []string{"mongosh", "mongodb://admin:p#ss@mongo:27017/admin"},
		[]string{"mongosh", "mongodb://admin:***@mongo:27017/admin"}},
	{"url password with ?", []string{"redis-cli", "-u", "redis://default:p?ss@redis:6379/0", "PING"},
		[]string{"redis-cli", "-u", "redis://default:***@redis:6379/0", "PING"}},
	{"userinfo without scheme", []string{"curl", "-x", "proxyuser:pw@proxy.internal:3128", "https://example.com/"},
		[]string{"curl", "-x", "proxyuser:***@proxy.internal:3128", "https://example.com/"}},
	{"go mysql dsn", []string{"/app/server", "-dsn", "shop:pw@tcp(mysql:3306)/shop?parseTime=true"},
		[]string{"/app/server", "-dsn", "shop:***@tcp(mysql:3306)/shop?parseTime=true"}},
	{"jdbc url", []string{"java", "-jar", "app.jar", "--spring.datasource.url=jdbc:mysql://app:pw@db:3306/shop"},
		[]string{"java", "-jar", "app.jar", "--spring.datasource.url=jdbc:mysql://app:***@db:3306/shop"}},
	{"secret with ; and {", []string{"app", "--password=a;b{c}", "DB_PASSWORD=x;y"},
		[]string{"app", "--password=***", "DB_PASSWORD=***"}},
	{"connection string", []string{"dotnet", "Shop.dll", "--ConnectionStrings:Default=Server=db;User Id=sa;Password=S3cret!;"},
		[]string{"dotnet", "Shop.dll", "--ConnectionStrings:Default=Server=db;User Id=sa;Password=***;"}},
	{"connection string alone", []string{"sqlcmd-wrapper", "Server=x;User Id=y;Password=secret;"},
		[]string{"sqlcmd-wrapper", "Server=x;User Id=y;Password=***;"}},
	{"json password", []string{"curl", "-d", `{"user":"admin","password":"x"}`, "https://api.example.com/login"},
		[]string{"curl", "-d", `{"user":"admin","password":"***"}`, "https://api.example.com/login"}},
	{"json token", []string{"curl", "--data", `{"token": "x", "ttl": 60}`, "https://vault:8200/v1/auth/token/renew"},
		[]string{"curl", "--data", `{"token": "***", "ttl": 60}`, "https://vault:8200/v1/auth/token/renew"}},
	{"--passphrase", []string{"gpg", "--batch", "--passphrase", "correct horse", "-d", "backup.gpg"},
		[]string{"gpg", "--batch", "--passphrase", "***", "-d", "backup.gpg"}},
	{"--jwt", []string{"nats", "--jwt", "eyJ0eXAiOiJKV1QifQ.e30.x", "pub", "orders", "hi"},
		[]string{"nats", "--jwt", "***", "pub", "orders", "hi"}},
	{"--bearer", []string{"grpcurl", "--bearer", "abc123", "api:443", "list"},
		[]string{"grpcurl", "--bearer", "***", "api:443", "list"}},
	{"--cookie", []string{"curl", "--cookie", "session=abc123", "https://app.example.com/"},
		[]string{"curl", "--cookie", "***", "https://app.example.com/"}},
	{"X-Amz-Signature", []string{"curl", "-o", "obj", "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAX%2F20260301%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260301T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=abcdef0123"},
		[]string{"curl", "-o", "obj", "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Date=20260301T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=***"}},
	{"sas sig", []string{"wget", "https://acct.blob.core.windows.net/c/b.tgz?sv=2022-11-02&sr=b&sp=r&se=2026-03-02T00%3A00%3A00Z&sig=AbC%2Bd%3D"},
		[]string{"wget", "https://acct.blob.core.windows.net/c/b.tgz?sv=2022-11-02&sr=b&sp=r&se=2026-03-02T00%3A00%3A00Z&sig=***"}},
	{"cloudfront Signature", []string{"curl", "-O", "https://d111.cloudfront.net/v.mp4?Expires=1767225600&Signature=Zm9v~YmFy&Key-Pair-Id=K2JCJMDEHXQW5F"},
		[]string{"curl", "-O", "https://d111.cloudfront.net/v.mp4?Expires=1767225600&Signature=***&Key-Pair-Id=***"}},
	{"X-Goog-Signature", []string{"curl", "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=900&X-Goog-Signature=0a1b2c"},
		[]string{"curl", "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=900&X-Goog-Signature=***"}},
	{"sh -c mysql", []string{"sh", "-c", "mysql -h db -uroot -psecret shop < /seed.sql"},
		[]string{"sh", "-c", "mysql -h db -uroot -p*** shop < /seed.sql"}},
	{"bash -ec pipeline", []string{"/bin/bash", "-ec", `PGPASSWORD=pw psql -h db -c 'select 1' && curl -H "Authorization: Bearer t" https://h/`},
		[]string{"/bin/bash", "-ec", `PGPASSWORD=*** psql -h db -c 'select 1' && curl -H "Authorization: ***" https://h/`}},
	{"env wrapper", []string{"env", "LANG=C", "mysqldump", "-uroot", "-pS3cret", "--all-databases"},
		[]string{"env", "LANG=C", "mysqldump", "-uroot", "-p***", "--all-databases"}},

	// Not over-masked.
	{"find -print", []string{"find", ".", "-name", "*.log", "-print"}, nil},
	{"find -perm -prune", []string{"find", "/data", "-path", "/data/tmp", "-prune", "-o", "-perm", "-4000", "-print0"}, nil},
	{"ls -la", []string{"ls", "-la", "/var/log"}, nil},
	{"grep -r", []string{"grep", "-r", "pattern", "/etc"}, nil},
	{"tar -xzf", []string{"tar", "-xzf", "backup.tar.gz", "-C", "/data"}, nil},
	{"ps -aux", []string{"ps", "-aux"}, nil},
	{"curl -v query", []string{"curl", "-v", "https://host/path?x=1&page=2"}, nil},
	{"url without credentials", []string{"wget", "https://example.com/releases/v1.2.3/app.tar.gz"}, nil},
	{"mysql -p prompts", []string{"mysql", "-h", "db", "-p", "shop"}, nil},
	{"mkdir -p", []string{"mkdir", "-p", "/var/lib/app"}, nil},
	{"docker run -p", []string{"docker", "run", "-p", "8080:80", "nginx:1.25@sha256:0d3b5f0ae1e8e1b5d6c1b2a5f6e7d8c9"}, nil},
	{"scp address", []string{"scp", "dump.sql", "backup@10.0.0.5:/srv/dumps/"}, nil},
	{"header not secret", []string{"curl", "-H", "Content-Type: application/json", "-d", `{"name":"x"}`, "https://api/"}, nil},
	{"sh -c plain", []string{"sh", "-c", "cd /app && exec ./server --port=8080 2>&1 | tee /log"}, nil},
	{"no-cookies", []string{"wget", "--no-cookies", "https://example.com/"}, nil},
}

func TestRedactedGaps(t *testing.T) {
	for _, tc := range gapCases {
		want := tc.want
		if want == nil {
			want = tc.in
		}
		if got := Redacted.Args(tc.in); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Redacted.Args(%q)\n got %q\nwant %q", tc.name, tc.in, got, want)
		}
	}
}

// Any command line: one argument out per argument in, nothing panics, and
// a secret flag's value never comes out.
func FuzzRedacted(f *testing.F) {
	for _, tc := range gapCases {
		if len(tc.in) == 3 {
			f.Add(tc.in[0], tc.in[1], tc.in[2])
		}
	}
	f.Add("sh", "-c", `a "b\" 'c`)
	f.Add("bash", "-c", `x='unterminated`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := []string{a, b, c, "--password", "hunter2"}
		out := Redacted.Args(in)
		if len(out) != len(in) || out[4] != Mask {
			t.Errorf("Redacted.Args(%q) = %q", in, out)
		}
	})
}
