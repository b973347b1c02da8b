#!/usr/bin/env bash
# ferry.1 documents every command and every option the binary has: the commands come from
# `ferry --help`, the subcommands from the usage lines of `ferry CMD --help` ("ferry CMD SUB ..."
# with SUB a lower-case word), the options from each one's own --help. A command added to the
# table in runner/cli/main.c, or an option added to a command's usage, fails this test until ferry.1
# has it, so `ferry run` and its options are required as soon as it is listed.
#
# In ferry.1 a command needs a "ferry CMD" line in SYNOPSIS; a command (or "CMD SUB") an entry
# in COMMANDS (a .TP tag starting with its name), and each of its long options a .TP tag in an
# OPTIONS subsection whose title names it:
# `.SS "validate, expand"` covers both commands, `.SS "dataset gen"` covers `dataset` and
# `dataset gen`, `.SS "guest build, info, path"` covers guest and its three subcommands.
# --help and --version belong to the `.SS ferry` subsection. Conversely every option a
# subsection documents must be printed by the --help of a command its title names.
#
# Usage: tests/docs-commands.sh [MANPAGE]   (default: $FERRY_SOURCE_DIR/ferry.1)
set -uo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
page="${1:-$src/ferry.1}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Collect what the binary says, one record per line: "CMD<TAB>SUB<TAB>--opt --opt ...".
if ! "$ferry" --help >"$scratch/help"; then
	echo "not ok 1 - '$ferry --help' failed"
	echo "1..1"
	exit 1
fi
commands=$(sed -n '/^Commands:/,/^$/{s/^  \([a-z][a-z0-9-]*\) .*/\1/p}' "$scratch/help")
if [ -z "$commands" ]; then
	echo "not ok 1 - no commands found in '$ferry --help'"
	echo "1..1"
	exit 1
fi

options_of() { # the long options a help text mentions, except the global ones
	grep -o -- '--[a-z][a-z0-9-]*' "$1" | grep -v -x -e '--help' -e '--version' | sort -u |
		tr '\n' ' '
}

: >"$scratch/wanted"
for cmd in $commands; do
	"$ferry" "$cmd" --help >"$scratch/cmd-help" 2>&1
	printf '%s\t\t%s\n' "$cmd" "$(options_of "$scratch/cmd-help")" >>"$scratch/wanted"
	subs=$(sed -n "s/^\(usage:\)\? *ferry $cmd \([a-z][a-z0-9-]*\)\( .*\)\?\$/\2/p" \
		"$scratch/cmd-help" | sort -u)
	for sub in $subs; do
		# the options on the subcommand's own usage line(s), plus those its --help prints
		# beyond the shared usage (some subcommands print the whole command's usage)
		grep -E "^(usage:)? *ferry $cmd $sub( |\$)" "$scratch/cmd-help" >"$scratch/sub-usage"
		# continuation lines of that usage (indented, not starting a new "ferry" line)
		awk -v c="$cmd" -v s="$sub" '
			$0 ~ "^(usage:)? *ferry " c " " s "( |$)" { on = 1; next }
			on && /^ +\[|^ +--/ && $0 !~ /ferry / { print; next }
			{ on = 0 }' "$scratch/cmd-help" >>"$scratch/sub-usage"
		printf '%s\t%s\t%s\n' "$cmd" "$sub" "$(options_of "$scratch/sub-usage")" \
			>>"$scratch/wanted"
	done
done

/usr/bin/python3 - "$page" "$scratch/wanted" "$scratch/help" <<'PY'
import re, sys

page, wanted_path, help_path = sys.argv[1:4]
src = open(page).read().splitlines()

def plain(line):
    """Text of a man source line without requests, font escapes, quotes or \\-."""
    line = re.sub(r'^\.[A-Z]{1,2}\s?', '', line)
    line = re.sub(r'\\f[BIRP]|\\f\(..|\\&|\\e', '', line)
    return line.replace('\\-', '-').replace('"', '').strip()

# Split into sections (.SH) and subsections (.SS), and collect .TP tags (the line after .TP).
sections = {}   # section title -> list of (subsection title, tag text)
lines = {}      # section title -> its lines as plain text
sh = ss = None
i = 0
while i < len(src):
    l = src[i]
    if l.startswith('.SH '):
        sh, ss = plain(l), None
        sections.setdefault(sh, [])
        lines.setdefault(sh, [])
    elif l.startswith('.SS '):
        ss = plain(l)
    elif l.startswith('.TP') and i + 1 < len(src) and sh:
        sections[sh].append((ss, plain(src[i + 1])))
    if sh and not l.startswith('.SH '):
        lines[sh].append(plain(l))
    i += 1

def words(title):
    return set(re.split(r'[\s,]+', title or ''))

tests = []  # (ok, description, details)
command_tags = [t for _, t in sections.get('COMMANDS', [])]
options = sections.get('OPTIONS', [])

def tag_has_option(tag, opt):
    return re.search(r'(^|[\s,])' + re.escape(opt) + r'($|[\s,=])', tag) is not None

for line in open(wanted_path).read().splitlines():
    cmd, sub, opts = line.split('\t')
    name = cmd + (' ' + sub if sub else '')
    has_entry = any(t == name or t.startswith(name + ' ') for t in command_tags)
    if not sub and not has_entry:
        # a command documented through its subcommands' entries ("guest build", ...)
        has_entry = any(t.startswith(cmd + ' ') for t in command_tags)
    tests.append((has_entry, "ferry.1 COMMANDS has an entry for '%s'" % name, ''))
    if not sub and cmd != 'help':
        in_synopsis = any(re.match(r'ferry %s( |$)' % re.escape(cmd), t)
                          for t in lines.get('SYNOPSIS', []))
        tests.append((in_synopsis, "ferry.1 SYNOPSIS has 'ferry %s'" % cmd, ''))
    for opt in opts.split():
        def covers(ss):
            w = words(ss)
            return cmd in w and (not sub or sub in w or w == {cmd})
        found = any(covers(ss) and tag_has_option(tag, opt) for ss, tag in options)
        tests.append((found, "ferry.1 OPTIONS documents '%s %s'" % (name, opt),
                      'add a .TP entry for %s under .SS "%s" in OPTIONS' % (opt, name)))

# and the other way round: what ferry.1 documents as an option of a command, the command has
# (an option removed from the code, or a misspelt one, leaves no stale entry behind)
known = {}
for line in open(wanted_path).read().splitlines():
    cmd, sub, opts = line.split('\t')
    if not sub:
        known[cmd] = set(opts.split())
named = set()
for ss, tag in options:
    if ss == 'ferry':
        continue
    cmds = words(ss) & set(known)
    if not cmds:
        if ss in named:
            continue
        named.add(ss)
        tests.append((False, "ferry.1 OPTIONS subsection '%s' names a command" % ss,
                      "'ferry --help' lists: " + ' '.join(sorted(known))))
        continue
    have = set().union(*(known[c] for c in cmds))
    for opt in re.findall(r'--[a-z][a-z0-9-]*', tag):
        tests.append((opt in have, "'%s' documented under '%s' exists in its --help" % (opt, ss),
                      'remove it from ferry.1 or add it to the usage of ' + ', '.join(sorted(cmds))))

for opt in ('--help', '--version'):
    if opt in open(help_path).read():
        found = any(ss == 'ferry' and tag_has_option(tag, opt) for ss, tag in options)
        tests.append((found, "ferry.1 OPTIONS documents 'ferry %s'" % opt, ''))

failed = 0
for n, (ok, what, hint) in enumerate(tests, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', n, what))
    if not ok:
        failed = 1
        if hint:
            print('# ' + hint)
print('1..%d' % len(tests))
sys.exit(failed)
PY
