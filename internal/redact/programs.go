// The flags some programs take a secret in, and the programs that run
// another command (env, sudo, sh -c).

package redact

import (
	"path"
	"strings"
)

// valueKind is what an argument holds, as the flag before it tells.
type valueKind int

const (
	plain    valueKind = iota // an ordinary argument
	secret                    // masked whole: --password x, sshpass -p x
	attached                  // masked whole, given only as -pX (mysql -p alone prompts)
	userPass                  // user:password, the password masked (curl -u)
	script                    // a shell command line (sh -c '...')
)

// maxDepth bounds the shell command lines inside shell command lines.
const maxDepth = 4

// mask masks a the way its flag says.
func (k valueKind) mask(a string, depth int) string {
	switch k {
	case secret, attached:
		return Mask
	case userPass:
		if user, _, ok := strings.Cut(a, ":"); ok {
			return user + ":" + Mask
		}
		return a
	case script:
		if depth < maxDepth {
			return shellLine(a, depth+1)
		}
	}
	v, _ := arg(a)
	return v
}

// rules are what a program's arguments mean, as far as secrets go.
type rules struct {
	flags   map[string]valueKind // flag -> its value
	sub     map[string]*rules    // subcommands: docker login
	wrapper bool                 // runs the command in its arguments: env, sudo, timeout
	shell   bool                 // -c takes a command line
}

var (
	loginRules = &rules{flags: map[string]valueKind{"-p": secret}}
	shellRules = &rules{shell: true}
	wrapper    = &rules{wrapper: true}
	mysqlRules = &rules{flags: map[string]valueKind{"-p": attached}}
	mongoRules = &rules{flags: map[string]valueKind{"-p": secret}}
	registry   = &rules{sub: map[string]*rules{"login": loginRules}}
)

// programs are the programs with rules, by the base name of their path.
var programs = map[string]*rules{
	"sshpass":   {flags: map[string]valueKind{"-p": secret}, wrapper: true},
	"redis-cli": {flags: map[string]valueKind{"-a": secret}},
	"curl":      {flags: map[string]valueKind{"-u": userPass, "--user": userPass, "-U": userPass, "--proxy-user": userPass}},
	"docker":    registry, "podman": registry, "nerdctl": registry, "buildah": registry, "skopeo": registry, "oras": registry,
	"helm":  {sub: map[string]*rules{"registry": registry}},
	"mysql": mysqlRules, "mysqldump": mysqlRules, "mysqladmin": mysqlRules, "mysqlimport": mysqlRules,
	"mysqlcheck": mysqlRules, "mysqlshow": mysqlRules, "mysqlpump": mysqlRules,
	"mariadb": mysqlRules, "mariadb-dump": mysqlRules, "mariadb-admin": mysqlRules,
	"mongo": mongoRules, "mongosh": mongoRules, "mongodump": mongoRules, "mongorestore": mongoRules,
	"mongoexport": mongoRules, "mongoimport": mongoRules,
	"sh": shellRules, "bash": shellRules, "dash": shellRules, "zsh": shellRules, "ash": shellRules, "ksh": shellRules,
	"env": wrapper, "sudo": wrapper, "doas": wrapper, "exec": wrapper, "nice": wrapper, "nohup": wrapper,
	"timeout": wrapper, "time": wrapper, "stdbuf": wrapper, "ionice": wrapper, "setsid": wrapper, "chroot": wrapper,
	"xargs": wrapper, "busybox": wrapper, "gosu": wrapper, "su-exec": wrapper, "tini": wrapper, "dumb-init": wrapper,
}

// arg masks one argument of a program with rules r (nil: none), and tells
// what the next argument holds.
func (r *rules) arg(a string, depth int) (string, valueKind) {
	if r == nil {
		return arg(a)
	}
	if k, ok := r.flags[a]; ok {
		if k == attached {
			return a, plain
		}
		return a, k
	}
	if r.shell && isShellC(a) {
		return a, script
	}
	if len(a) > 2 && a[0] == '-' && a[1] != '-' {
		if k, ok := r.flags[a[:2]]; ok {
			return a[:2] + k.mask(a[2:], depth), plain
		}
	}
	if f, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(f, "--") {
		if k, ok := r.flags[f]; ok {
			return f + "=" + k.mask(v, depth), plain
		}
	}
	return arg(a)
}

// then is the rules for the arguments after a: a subcommand's (docker
// login), or the program's a wrapper runs (env ... mysql).
func (r *rules) then(a string) *rules {
	switch {
	case r == nil || strings.HasPrefix(a, "-"):
		return r
	case r.sub[a] != nil:
		return r.sub[a]
	case r.wrapper && programs[path.Base(a)] != nil:
		return programs[path.Base(a)]
	}
	return r
}

// isShellC tells -c, or a cluster of short options with c (-ec, -lc).
func isShellC(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' || !strings.ContainsRune(a, 'c') {
		return false
	}
	for _, c := range a[1:] {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
