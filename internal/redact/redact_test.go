package redact

import (
	"reflect"
	"testing"
)

func TestRedacted(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"mysql", "-uroot", "-ps3cr3t", "db"}, []string{"mysql", "-uroot", "-p***", "db"}},
		{[]string{"app", "--password=hunter2", "--port=8080"}, []string{"app", "--password=***", "--port=8080"}},
		{[]string{"app", "--password", "hunter2", "--verbose"}, []string{"app", "--password", "***", "--verbose"}},
		{[]string{"app", "--api-token", "abc", "--db-password=x", "--client_secret=y"}, []string{"app", "--api-token", "***", "--db-password=***", "--client_secret=***"}},
		{[]string{"env", "AWS_SECRET_ACCESS_KEY=abc", "GITHUB_TOKEN=ghp_x", "PATH=/bin", "sh"}, []string{"env", "AWS_SECRET_ACCESS_KEY=***", "GITHUB_TOKEN=***", "PATH=/bin", "sh"}},
		{[]string{"psql", "postgres://app:pa55@db:5432/shop"}, []string{"psql", "postgres://app:***@db:5432/shop"}},
		{[]string{"curl", "--url=https://u:p@example.com/x"}, []string{"curl", "--url=https://u:***@example.com/x"}},
		{[]string{"sh", "-c", "sleep 5; exit 1"}, []string{"sh", "-c", "sleep 5; exit 1"}},
		{[]string{"/opt/cni/bin/bridge"}, []string{"/opt/cni/bin/bridge"}},
		{[]string{"app", "--keyboard-layout=us", "--monkey=1"}, []string{"app", "--keyboard-layout=us", "--monkey=1"}},
	} {
		if got := Redacted.Args(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Redacted.Args(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPolicies(t *testing.T) {
	in := []string{"app", "--password=x"}
	if got := None.Args(in); got != nil {
		t.Errorf("None: %q", got)
	}
	if got := Argv0.Args(in); !reflect.DeepEqual(got, []string{"app"}) {
		t.Errorf("Argv0: %q", got)
	}
	got := Full.Args(in)
	if !reflect.DeepEqual(got, in) {
		t.Errorf("Full: %q", got)
	}
	got[0] = "changed"
	if in[0] != "app" {
		t.Error("Full shares the caller's slice")
	}
	for _, s := range []string{"none", "argv0", "redacted", "full"} {
		p, err := Parse(s)
		if err != nil || p.String() != s {
			t.Errorf("Parse(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := Parse("some"); err == nil {
		t.Error("Parse accepted a bad value")
	}
}
