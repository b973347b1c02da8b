# Sourced by the interactive zsh that tests/zsh/complete.zsh starts in a pseudo-terminal: loads
# the completion in $ZT_DIR with compinit and binds ^T to a widget that runs complete-word with
# compadd wrapped to append every match it adds to $ZT_OUT (the way zsh-capture-completion reads
# matches), then writes '--done--' and clears the line.
PS1='' RPROMPT=''
fpath=($ZT_DIR $fpath)
autoload -Uz compinit && compinit -u -D
compadd() {
	# the calls that only ask (-O, -A, -D fill an array) go straight through
	if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
		builtin compadd "$@"
		return
	fi
	local -a hits
	builtin compadd -A hits "$@"
	print -rl -- $hits >>$ZT_OUT
	builtin compadd "$@"
}
_zt_capture() {
	: >$ZT_OUT
	zle complete-word
	print -r -- '--done--' >>$ZT_OUT
	BUFFER=''
}
zle -N _zt_capture
bindkey '^T' _zt_capture
print -r -- '--ready--' >$ZT_OUT
