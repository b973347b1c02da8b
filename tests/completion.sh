#!/usr/bin/env bash
# `ferry completion bash|zsh|fish` prints scripts generated from the command tables: bash's is
# loaded and asked as bash asks it (COMP_WORDS, COMP_CWORD, then COMPREPLY), fish's through
# `complete -C`, zsh's by an interactive zsh in a pseudo-terminal (tests/zsh/complete.zsh). Every command `ferry --help` lists completes from a prefix,
# and every option a command's --help prints is offered after "--".
set -uo pipefail
ferry="${FERRY:?}"
src="${FERRY_SOURCE_DIR:?}"
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

if command -v zsh >/dev/null && zsh -fc 'zmodload zsh/zpty' 2>/dev/null; then
	zsh -n "$scratch/_ferry"
	ok "zsh: the script parses"
	# an interactive zsh in a pseudo-terminal completes each line (tests/zsh/complete.zsh)
	mkdir -p "$scratch/zsh"
	cp "$scratch/_ferry" "$scratch/zsh/_ferry"
	zcases=("ferry ru" "ferry run --allow-e" "ferry run --storage=" "ferry run --sto"
		"ferry run " "ferry validate copy.yaml " "ferry report " "ferry compare --rule w"
		"ferry dataset " "ferry dataset gen --con" "ferry dataset gen --content z" "ferry guest build "
		"ferry completion " "ferry help ru" "ferry run --connect " "ferry ")
	zsh -f "$src/tests/zsh/complete.zsh" "$scratch/zsh" "${zcases[@]}" >"$scratch/zsh.out" \
		2>"$scratch/zsh.err"
	ok "zsh: an interactive zsh completes through _ferry" || cat "$scratch/zsh.err"
	zexpect() { # zexpect "LINE" "WANTED": the matches zsh offered for LINE<TAB>
		grep -F -x -q -- "$1=>$2${2:+ }" "$scratch/zsh.out"
		ok "zsh: '$1<TAB>' offers '$2'" || echo "# got '$(grep -F -- "$1=>" "$scratch/zsh.out")'"
	}
	zexpect "ferry ru" "run"
	zexpect "ferry run --allow-e" "--allow-empty --allow-env"
	zexpect "ferry run --storage=" "auto local volumes"
	zexpect "ferry run --sto" "--storage"
	zexpect "ferry run " "copy.yaml plans"
	zexpect "ferry validate copy.yaml " "copy.yaml plans"
	zexpect "ferry report " "plans results.json"
	zexpect "ferry compare --rule w" "welch"
	zexpect "ferry dataset " "command gen scan verify"
	zexpect "ferry dataset gen --con" "--content"
	zexpect "ferry dataset gen --content z" "zeros"
	zexpect "ferry guest build " "builtin debian"
	zexpect "ferry completion " "bash fish zsh"
	zexpect "ferry help ru" "run"
	zexpect "ferry run --connect " ""
	zexpect "ferry " "$(printf '%s\n' $commands | sort | tr '\n' ' ' | sed 's/ $//')"
else
	skip "zsh: completions" "zsh or its zsh/zpty module is not installed (scripts/setup.sh installs zsh)"
fi

if command -v fish >/dev/null; then
	fc() { fish -c "source $scratch/ferry.fish; complete -C '$1'" | cut -f1 | sort | tr '\n' ' '; }
	[ "$(fc 'ferry ru')" = "run " ]
	ok "fish: 'ferry ru' offers run"
	[ "$(fc 'ferry run --storage ')" = "auto local volumes " ]
	ok "fish: 'ferry run --storage ' offers its values"
	[ "$(fc 'ferry dataset ')" = "command gen scan verify " ]
	ok "fish: 'ferry dataset ' offers the subcommands"
	[ "$(fc 'ferry run ')" = "copy.yaml plans/ " ]
	ok "fish: 'ferry run ' offers the plan and the directory, not the other files" ||
		echo "# got '$(fc 'ferry run ')'"
	[ "$(fc 'ferry report ')" = "plans/ results.json " ]
	ok "fish: 'ferry report ' offers the results file and the directory" ||
		echo "# got '$(fc 'ferry report ')'"
	[ "$(fc 'ferry run --resume ')" = "plans/ results.json " ]
	ok "fish: 'ferry run --resume ' offers the results file and the directory"
	[ "$(fc 'ferry run --junit ')" = "copy.yaml notes.txt plans/ results.json " ]
	ok "fish: 'ferry run --junit ' offers any file"
else
	skip "fish: completions" "fish not installed (scripts/setup.sh installs it)"
fi

echo "1..$n"
exit "$failed"
