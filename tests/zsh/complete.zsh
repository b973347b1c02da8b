# zsh -f complete.zsh DIR LINE...: what zsh's completion offers at the end of each LINE, as
# "LINE=>MATCH MATCH ... " (sorted, unique), from the completion functions in DIR (_ferry).
# zsh completes only inside its line editor, so an interactive `zsh -f -i` runs in a
# pseudo-terminal (zsh/zpty), sources capture.zsh, and each LINE is typed followed by ^T.
zmodload zsh/zpty || exit 1
export ZT_DIR=$1 ZT_OUT=$1/matches
shift
zpty ferry_zt zsh -f -i
zpty -w ferry_zt "source ${0:A:h}/capture.zsh"
wait_for() { # drain the terminal's output until $ZT_OUT has the line $1 (at most 20 s)
	local i chunk
	for i in {1..400}; do
		while zpty -rt ferry_zt chunk 2>/dev/null; do :; done
		[[ -f $ZT_OUT ]] && grep -qx -- "$1" $ZT_OUT && return 0
		sleep 0.05
	done
	return 1
}
wait_for --ready-- || { print -u2 "the interactive zsh did not start"; zpty -d ferry_zt; exit 1; }
for line in "$@"; do
	rm -f $ZT_OUT
	zpty -w -n ferry_zt "$line"$'\x14'
	wait_for --done-- || { print -u2 "no completion ran for '$line'"; zpty -d ferry_zt; exit 1; }
	print -r -- "$line=>$(grep -v -e '^--done--$' -e '^$' $ZT_OUT | sort -u | tr '\n' ' ')"
done
zpty -d ferry_zt
