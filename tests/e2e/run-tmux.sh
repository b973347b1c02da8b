#!/usr/bin/env bash
# The terminal of `ferry run`, as a person sees it: tmux runs a small plan (two null methods in
# 3 blocks, tests/e2e/plans/run-tmux.yaml) in a 60-column and in a 200-column window, and the
# test reads the screen every 0.1 s while it runs (tmux capture-pane):
# - the screen never holds more than one status line, and it is never wider than the window
#   less one column (so it never wraps and leaves copies behind): cut at 60 columns, whole (the
#   cell's id and the ETA) at 200;
# - the 200-column window is narrowed to 80 columns during the run (SIGWINCH): the status lines
#   after that fit 80;
# - at the end no status line is left, and the verdicts printed are the Markdown report's;
# - with standard error not a terminal, the same run prints plain lines (no escape sequence, no
#   carriage return).
source "$(dirname "$0")/run-lib.sh"
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed (scripts/setup.sh installs it)"; exit 77; }

plan="$src/tests/e2e/plans/run-tmux.yaml"
sock="$work/tmux.sock"
tm() { tmux -S "$sock" "$@"; }
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT

# drive WIDTH [NARROW]: runs the plan in a WIDTH-column tmux window (narrowed to NARROW columns
# once a status line has shown an ETA, when given); the screens in $work/wWIDTH/cap.N, the index of
# the last capture before narrowing in .../narrowed, the whole history at the end in .../final
drive() {
	local w="$1" narrow="${2:-}" d="$work/w$1" i=0 seen=0
	mkdir "$d"
	# the command line first, as a shell shows it: tmux, when a narrower window wraps a line,
	# pushes the screen's top row into its history, out of reach of any program; with nothing
	# above it the status line would be that row
	tm new-session -d -x "$w" -y 50 -s "w$w" \
		"cd '$d'; echo '\$ ferry run'; '$ferry' run --results r.json --markdown r.md '$plan' & echo \$! >'$d/pid'; wait \$!; echo \$? >'$d/rc'; exec sleep 3600"
	while [ ! -f "$d/rc" ]; do
		i=$((i + 1))
		tm capture-pane -p -t "w$w" >"$d/cap.$i"
		# narrowed once the status line has shown an ETA (there is none until a boot and a run
		# are measured) on 5 screens
		if [ -n "$narrow" ] && [ ! -f "$d/narrowed" ] && grep -q '^\[[0-9]*/[0-9]*\] .*, eta ' "$d/cap.$i"; then
			seen=$((seen + 1))
			if [ "$seen" -ge 5 ]; then
				tm resize-window -t "w$w" -x "$narrow"
				echo "$i" >"$d/narrowed" # the capture before the resize
			fi
		fi
		[ "$i" -lt 6000 ] || fail "the run in the $w-column window did not end in 10 minutes"
		sleep 0.1
	done
	tm capture-pane -p -J -S - -t "w$w" >"$d/final"
	tm kill-session -t "w$w"
	[ "$(cat "$d/rc")" = 0 ] || { cat "$d/final"; fail "ferry run in the $w-column window exited $(cat "$d/rc")"; }
	check_clean "$(cat "$d/pid")"
	echo "ok: ferry run in a $w-column window${narrow:+ narrowed to $narrow}: $i screens read"
}

drive 60
drive 200 80
# the screens read, kept for a look when a check below fails
art="${FERRY_BUILD_DIR:?}/meson-logs/run-tmux"
rm -rf "$art" && mkdir -p "$art" && cp -r "$work/w60" "$work/w200" "$art/"

"$py" - "$work" <<'PY'
import glob, os, re, sys
work = sys.argv[1]
status = re.compile(r"^\[\d+/\d+\] block \d+/\d+ run \d+/\d+ ")
ids = ["vm=tiny,disk=ram,dataset=one,method=fast", "vm=tiny,disk=ram,dataset=one,method=slow"]

def screens(w):
    d = os.path.join(work, "w%d" % w)
    caps = sorted(glob.glob(d + "/cap.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    narrowed = int(open(d + "/narrowed").read()) if os.path.exists(d + "/narrowed") else None
    return d, [(int(p.rsplit(".", 1)[1]), open(p).read().splitlines()) for p in caps], narrowed

def redrawn(caps, narrowed):
    # the first screen after the resize whose status line fits 80 columns: ferry redraws at the
    # next phase, until then the terminal shows the old line as it re-wrapped it (a slow run's
    # transfer takes 800 ms); None if ferry never drew at the new width
    for i, screen in caps:
        if i > narrowed and any(status.match(l) and len(l) <= 79 for l in screen):
            return i
    return None

for w in (60, 200):
    d, caps, narrowed = screens(w)
    if narrowed is not None:
        narrowed = redrawn(caps, narrowed)
        assert narrowed is not None, "%d columns: no status line at 80 columns after the resize" % w
        # the old line, re-wrapped by the terminal, stays until that redraw: not ferry's
        caps = [(i, s) for i, s in caps if i >= narrowed or not any(
            status.match(l) and len(l) == 80 for l in s)]
    lines = []
    for i, screen in caps:
        st = [l for l in screen if status.match(l)]
        assert len(st) <= 1, ("%d columns, screen %d holds %d status lines" % (w, i, len(st)), screen)
        # nothing but the status line may look like one (a wrapped copy starts the same way)
        assert sum(l.startswith("[") for l in screen) == len(st), (w, i, screen)
        width = 80 if narrowed and i >= narrowed else w
        for l in st:
            assert len(l) <= width - 1, "%d columns, screen %d: %d-column status line %r" % (w, i, len(l), l)
            lines.append((i, l))
    assert len(lines) >= 5, "%d columns: only %d screens showed a status line" % (w, len(lines))
    if w == 60:
        assert all(len(l) == 59 for _, l in lines), [l for _, l in lines if len(l) != 59]
    else:
        before = [l for i, l in lines if i < narrowed]
        after = [l for i, l in lines if i >= narrowed]
        assert any(l.endswith(ids[0]) or l.endswith(ids[1]) for l in before), before
        assert any(", eta " in l for l in before), "no ETA in any status line"
        assert after and all(len(l) <= 79 for l in after), after
    final = open(d + "/final").read()
    left = [l for l in final.splitlines() if l.startswith("[")]
    assert not left, ("%d columns: status lines left on the screen" % w, left)
    # the verdicts said at the end are the Markdown report's
    md = open(d + "/r.md").read()
    sec = md.split("### Verdicts\n", 1)[1].split("\n### ", 1)[0]
    unesc = lambda s: re.sub(r"\\(.)", r"\1", s).replace("\u00a0", " ")
    tables = re.findall(r"^- \*\*(.*)\*\*: (fastest mean .*)$", sec, re.M)
    texts = [unesc(t) for t in re.findall(r"^  - (.*)$", sec, re.M)]
    said = [l[len("ferry: "):] for l in final.splitlines() if "fastest mean" in l]
    assert len(tables) == 1 and len(texts) == 1 and len(said) == 1, (tables, texts, said)
    assert said[0].startswith(unesc(tables[0][0]) + ": " + unesc(tables[0][1]).split(" (")[0]), (said, tables)
    assert texts[0] in said[0], (texts, said)
    print("ok: %d columns: %d screens with one status line each (%s), none left at the end; "
          "the verdict said is the Markdown's: %s" % (w, len(lines),
          "59 columns, cut" if w == 60 else "whole, then at most 79 after narrowing to 80", said[0]))
PY

# not a terminal: plain lines
res="$work/plain.json"
run_ferry 0 "$plan" --results "$res"
! grep -q $'\033\\|\r' "$work/log" || fail "escape sequences or carriage returns in the log of a run whose standard error is a file"
grep -q "^ferry: \[1/2\] vm=tiny,disk=ram,dataset=one,method=fast: passed" "$work/log" ||
	fail "no plain line for the first cell"
echo "ok: with standard error a file, plain lines only"
