#!/usr/bin/env bash
# `ferry completion bash|zsh|fish` prints scripts generated from the command tables: bash's is
# loaded and asked as bash asks it (COMP_WORDS, COMP_CWORD, then COMPREPLY), fish's through
# `complete -C`, zsh's is parsed. Every command `ferry --help` lists completes from a prefix,
# and every option a command's --help prints is offered after "--".
set -uo pipefail
ferry="${FERRY:?}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
n=0
failed=0
ok() { # ok DESCRIPTION: the previous command's status
	local rc=$?
	n=$((n + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		failed=1
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

"$ferry" completion bash >"$scratch/ferry.bash"
ok "ferry completion bash prints a script"
"$ferry" completion zsh >"$scratch/_ferry"
ok "ferry completion zsh prints a script"
"$ferry" completion fish >"$scratch/ferry.fish"
ok "ferry completion fish prints a script"
"$ferry" completion tcsh >/dev/null 2>"$scratch/err"
[ $? -eq 2 ] && grep -q "unknown shell 'tcsh'" "$scratch/err"
ok "an unknown shell is exit status 2 with the reason"

# a working directory with a plan, a results file and a directory
mkdir -p "$scratch/wd/plans"
touch "$scratch/wd/copy.yaml" "$scratch/wd/results.json" "$scratch/wd/notes.txt"
cd "$scratch/wd" || exit 1

# comp WORDS...: what bash's completion offers for the last word (space-separated, sorted)
comp() {
	bash -c 'source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ferry
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$scratch/ferry.bash" "$@"
}
expect() { # expect "WANTED" WORDS...
	local want="$1"
	shift
	local got
	got="$(comp "$@")"
	[ "$got" = "$want " ]
	ok "bash: '$*<TAB>' offers '$want'" || echo "# got '$got'"
}

[ "$(bash -c 'source "$1"; complete -p ferry' _ "$scratch/ferry.bash")" = "complete -F _ferry ferry" ]
ok "bash: complete -p ferry after sourcing"

expect "run" ferry ru
expect "--allow-empty --allow-env" ferry run --allow-e
expect "auto local volumes" ferry run --storage ""
expect "--storage" ferry run --hosts hosts.txt --sto
expect "copy.yaml plans" ferry run ""
expect "copy.yaml plans" ferry validate copy.yaml ""
expect "plans results.json" ferry report ""
expect "welch" ferry compare --rule w
expect "table" ferry expand -f t
expect "command gen scan verify" ferry dataset ""
expect "zeros" ferry dataset gen --content z
expect "build" ferry guest b
expect "builtin debian" ferry guest build ""
expect "--force" ferry guest build --f
expect "bash fish zsh" ferry completion ""
expect "run" ferry help ru
expect "--help --version" ferry --
expect "" ferry run --connect ""

# every command and every option the binary documents completes
commands=$("$ferry" --help | sed -n '/^Commands:/,/^$/{s/^  \([a-z][a-z0-9-]*\) .*/\1/p}')
missing=""
for c in $commands; do
	comp ferry "${c:0:2}" | grep -qw -- "$c" || missing="$missing $c"
done
[ -z "$missing" ]
ok "bash: every command of 'ferry --help' completes from its first two letters" ||
	echo "# missing:$missing"
missing=""
for c in $commands; do
	offered="$(comp ferry "$c" --)"
	for o in $("$ferry" "$c" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
		case " $offered " in *" $o "*) ;; *) missing="$missing $c:$o" ;; esac
	done
done
[ -z "$missing" ]
ok "bash: every option of every 'ferry CMD --help' is offered after 'ferry CMD --'" ||
	echo "# missing:$missing"

if command -v zsh >/dev/null; then
	zsh -n "$scratch/_ferry"
	ok "zsh: the script parses"
	grep -q -- "'--storage=\[[^]]*\]:storage:(auto local volumes)'" "$scratch/_ferry"
	ok "zsh: --storage completes its values"
else
	skip "zsh: the script parses" "zsh not installed (scripts/setup.sh installs it)"
fi

if command -v fish >/dev/null; then
	fc() { fish -c "source $scratch/ferry.fish; complete -C '$1'" | cut -f1 | sort | tr '\n' ' '; }
	[ "$(fc 'ferry ru')" = "run " ]
	ok "fish: 'ferry ru' offers run"
	[ "$(fc 'ferry run --storage ')" = "auto local volumes " ]
	ok "fish: 'ferry run --storage ' offers its values"
	[ "$(fc 'ferry dataset ')" = "command gen scan verify " ]
	ok "fish: 'ferry dataset ' offers the subcommands"
	fc 'ferry run ' | grep -qw copy.yaml
	ok "fish: 'ferry run ' offers the plan"
else
	skip "fish: completions" "fish not installed (scripts/setup.sh installs it)"
fi

echo "1..$n"
exit "$failed"
