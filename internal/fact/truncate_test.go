package fact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
		cut  int
	}{
		{"short", "abc", 4, "abc", 0},
		{"exact", "abcd", 4, "abcd", 0},
		{"ascii", "abcdef", 4, "abcd", 2},
		{"two-byte straddles", "abcé", 4, "abc", 2}, // é is 2 bytes at 3..4
		{"three-byte straddles", "a€b", 2, "a", 4},  // € is 3 bytes at 1..3
		{"four-byte straddles", "ab😀", 5, "ab", 4},  // 😀 is 4 bytes at 2..5
		{"boundary after multi-byte", "€€x", 6, "€€", 1},
		{"invalid UTF-8 cut at the byte", "\x80\x80\x80\x80\x80\x80", 3, "\x80\x80\x80", 3},
		{"zero", "abc", 0, "", 3},
	} {
		got, cut := Truncate(tc.in, tc.max)
		if got != tc.want || cut != tc.cut {
			t.Errorf("%s: Truncate(%q, %d) = %q, %d; want %q, %d", tc.name, tc.in, tc.max, got, cut, tc.want, tc.cut)
		}
		if len(got)+cut != len(tc.in) {
			t.Errorf("%s: kept %d + cut %d != %d", tc.name, len(got), cut, len(tc.in))
		}
	}
}

// Cutting valid UTF-8 at every cap leaves valid UTF-8.
func TestTruncateKeepsUTF8Valid(t *testing.T) {
	s := strings.Repeat("aé€😀", 10)
	for limit := 0; limit <= len(s); limit++ {
		got, cut := Truncate(s, limit)
		if !utf8.ValidString(got) || len(got) > limit || len(got)+cut != len(s) || limit-len(got) >= utf8.UTFMax {
			t.Fatalf("Truncate(_, %d) = %q (%d cut)", limit, got, cut)
		}
	}
}

func TestTruncateArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		max  int
		want []string
		cut  int
	}{
		{"fits", []string{"ls", "-l"}, 4, []string{"ls", "-l"}, 0},
		{"last cut", []string{"echo", "hello"}, 6, []string{"echo", "he"}, 3},
		{"rest dropped", []string{"ab", "cd", "ef"}, 4, []string{"ab", "cd"}, 2},
		{"multi-byte not split", []string{"a", "€€"}, 3, []string{"a"}, 6},
		{"empty args kept", []string{"a", "", "b", "cd"}, 3, []string{"a", "", "b", "c"}, 1},
	} {
		got, cut := TruncateArgs(tc.in, tc.max)
		if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") || len(got) != len(tc.want) || cut != tc.cut {
			t.Errorf("%s: TruncateArgs(%q, %d) = %q, %d; want %q, %d", tc.name, tc.in, tc.max, got, cut, tc.want, tc.cut)
		}
	}
}
