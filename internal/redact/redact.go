// Package redact decides what of a command line leaves the tracer
// (--command-args): nothing, the program only, the arguments with secrets
// masked (the default), or everything. Command lines reach spans, the
// console, JSON output, `tracer events` and record files; each of them goes
// through the same Policy. Printable and JSONControls escape tenant text
// for the places it is printed to a terminal.
package redact

import (
	"fmt"
	"path"
	"strings"
)

// Policy is what of a command line is kept.
type Policy int

const (
	// Redacted keeps the arguments, with the values of secret-looking
	// flags and assignments masked (the default); also the secrets of
	// headers (-H 'Authorization: ...'), URLs (user:password@, signed
	// query parameters), connection strings, JSON texts, the password
	// flags of known programs (sshpass -p, docker login -p, redis-cli -a,
	// curl -u, mysql -pX) and of the commands in sh -c '...'.
	Redacted Policy = iota
	// None drops the command line.
	None
	// Argv0 keeps the program only.
	Argv0
	// Full keeps everything as it ran.
	Full
)

// Mask replaces a masked value.
const Mask = "***"

// Parse reads a --command-args value.
func Parse(s string) (Policy, error) {
	switch s {
	case "redacted", "":
		return Redacted, nil
	case "none":
		return None, nil
	case "argv0":
		return Argv0, nil
	case "full":
		return Full, nil
	}
	return Redacted, fmt.Errorf("--command-args %q: want none, argv0, redacted or full", s)
}

func (p Policy) String() string {
	switch p {
	case None:
		return "none"
	case Argv0:
		return "argv0"
	case Full:
		return "full"
	}
	return "redacted"
}

// Args applies the policy to a command line. The result is a new slice
// (nil for None, or for an empty command line); args is not modified.
func (p Policy) Args(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	switch p {
	case None:
		return nil
	case Argv0:
		return []string{args[0]}
	case Full:
		return append([]string(nil), args...)
	}
	return command(args, 0)
}

// command masks one command line; args[0] is the program, kept. depth
// counts the shell command lines (sh -c '...') it is inside.
func command(args []string, depth int) []string {
	out := make([]string, len(args))
	cur := programs[path.Base(args[0])]
	next := plain
	for i, a := range args {
		switch {
		case i == 0:
			out[i] = a
		case next != plain:
			out[i] = next.mask(a, depth)
			next = plain
		default:
			out[i], next = cur.arg(a, depth)
			cur = cur.then(a)
		}
	}
	return out
}

// arg masks one argument, and tells whether the next one is the value of a
// secret flag given as two arguments (--password secret).
func arg(a string) (string, valueKind) {
	if v, ok := header(a); ok {
		return v, plain
	}
	if isJSON(a) {
		return jsonSecrets(a), plain
	}
	k, v, isAssign := strings.Cut(a, "=")
	isAssign = isAssign && isName(k)
	if isAssign && secretName(k) {
		return k + "=" + Mask, plain
	}
	if c, ok := connString(a); ok {
		return c, plain
	}
	if isAssign {
		return k + "=" + value(v), plain
	}
	if strings.HasPrefix(a, "-") {
		if secretName(a) {
			return a, secret
		}
		return a, plain
	}
	return value(a), plain
}

// secretWords make a flag or variable name secret wherever they are in it;
// secretParts only as a whole part of it (between '-', '_', '.' or the
// ends): --cookie and --session-cookie, not --no-cookies.
var (
	secretWords = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key",
		"credential", "private_key", "private-key", "access_key", "access-key"}
	secretParts = []string{"pwd", "auth", "key", "pass", "jwt", "bearer", "cookie"}
)

// secretName tells a flag or variable name that holds a secret.
func secretName(k string) bool {
	k = strings.ToLower(strings.TrimLeft(k, "-"))
	if k == "" {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	for _, w := range secretParts {
		if k == w || strings.HasSuffix(k, "_"+w) || strings.HasSuffix(k, "-"+w) || strings.HasSuffix(k, "."+w) ||
			strings.HasPrefix(k, w+"_") || strings.HasPrefix(k, w+"-") {
			return true
		}
	}
	return false
}

// isName tells a flag or variable name (--db-password, -Dx.y, PGPASSWORD),
// the left side of an assignment; not a URL, a header or a JSON text.
func isName(k string) bool {
	k = strings.TrimPrefix(strings.TrimPrefix(k, "-"), "-")
	if k == "" || !(k[0] == '_' || 'a' <= k[0]|0x20 && k[0]|0x20 <= 'z') {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c == '.' || c == ':' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z') {
			return false
		}
	}
	return true
}
