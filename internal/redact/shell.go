// Shell command lines inside an argument: sh -c 'mysql -psecret db'.

package redact

import "strings"

// shellWord is one word of a shell command line: where it is, and its text
// with the quotes and escapes removed.
type shellWord struct {
	start, end int
	text       string
}

// shellLine masks the secrets of the commands in a shell command line as
// those of a command line, and keeps the rest of the text as it was (the
// quoting of a changed word may change). Expansions ($(...), `...`) are
// words like others.
func shellLine(s string, depth int) string {
	var b strings.Builder
	last := 0
	for _, cmd := range shellCommands(s) {
		words := make([]string, len(cmd))
		for i, w := range cmd {
			words[i] = w.text
		}
		masked := shellCommand(words, depth)
		for i, w := range cmd {
			if masked[i] != w.text {
				b.WriteString(s[last:w.start])
				b.WriteString(requote(s[w.start:w.end], masked[i]))
				last = w.end
			}
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// shellCommand masks one simple command: its leading assignments
// (TOKEN=x ./run), then the command line.
func shellCommand(words []string, depth int) []string {
	out := make([]string, len(words))
	i := 0
	for ; i < len(words) && isAssignment(words[i]); i++ {
		out[i], _ = arg(words[i])
	}
	if i < len(words) {
		copy(out[i:], command(words[i:], depth))
	}
	return out
}

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	return ok && k != "" && !strings.HasPrefix(k, "-") && isName(k)
}

// shellCommands splits a shell command line into simple commands (at ;, &,
// |, parentheses and new lines) and those into words (at blanks), the way
// sh quotes: '...' literally, "..." and \ with escapes.
func shellCommands(s string) [][]shellWord {
	var (
		cmds  [][]shellWord
		cur   []shellWord
		text  strings.Builder
		start = -1
	)
	endWord := func(i int) {
		if start >= 0 {
			cur = append(cur, shellWord{start, i, text.String()})
			text.Reset()
			start = -1
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			endWord(i)
		case strings.IndexByte(";&|()\n", c) >= 0:
			endWord(i)
			if len(cur) > 0 {
				cmds = append(cmds, cur)
				cur = nil
			}
		default:
			if start < 0 {
				start = i
			}
			i = shellChar(s, i, &text)
		}
	}
	endWord(len(s))
	if len(cur) > 0 {
		cmds = append(cmds, cur)
	}
	return cmds
}

// shellChar adds the character at s[i] to text, or the quoted text or
// escape that starts there, and returns the index of its last byte.
func shellChar(s string, i int, text *strings.Builder) int {
	switch s[i] {
	case '\'':
		j := strings.IndexByte(s[i+1:], '\'')
		if j < 0 {
			text.WriteString(s[i+1:])
			return len(s) - 1
		}
		text.WriteString(s[i+1 : i+1+j])
		return i + 1 + j
	case '"':
		for j := i + 1; j < len(s); j++ {
			switch {
			case s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\"\\$`\n", s[j+1]) >= 0:
				text.WriteByte(s[j+1])
				j++
			case s[j] == '"':
				return j
			default:
				text.WriteByte(s[j])
			}
		}
		return len(s) - 1
	case '\\':
		if i+1 < len(s) {
			text.WriteByte(s[i+1])
			return i + 1
		}
	}
	text.WriteByte(s[i])
	return i
}

// requote writes a masked word back into a shell command line: as it is
// if the shell would read it as one word, else in the quotes the original
// word was in ("..." or '...').
func requote(orig, masked string) string {
	if !strings.ContainsAny(masked, " \t\n'\"\\;&|<>()$`") {
		return masked
	}
	if len(orig) >= 2 && orig[0] == '"' && orig[len(orig)-1] == '"' {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
		return `"` + r.Replace(masked) + `"`
	}
	return "'" + strings.ReplaceAll(masked, "'", `'\''`) + "'"
}
