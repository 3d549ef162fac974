package redact

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"nginx -g daemon off;", "nginx -g daemon off;"},
		{`C:\path with\backslash`, `C:\path with\backslash`},
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本"},
		{"\x1b[2Jclear", `\x1b[2Jclear`},
		{"a\rb\nc\td\ae\bf\vg\fh", `a\rb\nc\td\ae\bf\vg\fh`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u0085\u009b31m", `c1\u0085\u009b31m`},
		{"bidi\u202egnp.exe", `bidi\u202egnp.exe`},
		{"bad\xff\xfeutf8\xc3", `bad\xff\xfeutf8\xc3`},
		{"sep\u2028\u2029", `sep\u2028\u2029`},
		{"tag\U000e0001", `tag\U000e0001`},
	} {
		got := Printable(tc.in)
		if got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Printable(%q) = %q: invalid UTF-8", tc.in, got)
		}
	}
}

func TestJSONControls(t *testing.T) {
	in := []byte("{\"a\":\"x\x7fy\u0085z\u009b\u00a0é\"}\n")
	want := `{"a":"x\u007fy\u0085z\u009b` + "\u00a0é\"}\n"
	if got := string(JSONControls(in)); got != want {
		t.Errorf("JSONControls = %q, want %q", got, want)
	}
	var a, b map[string]string
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil || a["a"] != b["a"] {
		t.Errorf("decodes to %q, %v; want %q", b["a"], err, a["a"])
	}
	plain := []byte(`{"a":"plain é"}`)
	if got := JSONControls(plain); &got[0] != &plain[0] {
		t.Error("clean JSON was copied")
	}
}
