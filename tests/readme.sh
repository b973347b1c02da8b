#!/usr/bin/env bash
# README.md says only what is true: every command in its fenced `sh` blocks names files that
# exist in the source tree and, when it runs ferry, a ferry command (and guest/dataset
# subcommand) that `ferry --help` lists; every relative link points at a file or directory that
# exists. Usage: tests/readme.sh [README]   (default: $FERRY_SOURCE_DIR/README.md)
set -uo pipefail
src="${FERRY_SOURCE_DIR:?}"
ferry="${FERRY:?}"
readme="${1:-$src/README.md}"

/usr/bin/python3 - "$readme" "$src" "$ferry" <<'PY'
import os, re, shlex, subprocess, sys

readme, src, ferry = sys.argv[1:4]
text = open(readme).read()
base = src  # README.md sits at the top of the source tree

def help_commands(*args):
    out = subprocess.run([ferry, *args, '--help'], capture_output=True, text=True).stdout
    return out

top = re.findall(r'^  ([a-z][a-z0-9-]*) ', help_commands().split('Commands:', 1)[-1], re.M)

def subcommands(cmd):
    out = help_commands(cmd)
    return set(re.findall(r'^(?:usage:)? *ferry ' + re.escape(cmd) + r' ([a-z][a-z0-9-]*)\b', out, re.M))

tests = []
blocks = re.findall(r'^```sh\n(.*?)^```', text, re.M | re.S)
tests.append((bool(blocks), 'README.md has fenced sh blocks', ''))
for block in blocks:
    # join continuation lines, drop comments
    for line in block.replace('\\\n', ' ').splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            tests.append((False, 'README.md sh line parses: %s' % line, str(e)))
            continue
        if not words:
            continue
        for w in words:
            if w.startswith('-') or '://' in w or '$' in w or os.path.basename(w) == 'ferry':
                continue
            if '/' in w or re.search(r'\.(sh|ya?ml|json|1|md)$', w):
                if w.startswith('/') or any(c in w for c in '*?['):
                    continue  # host paths and globs are not ours to check
                ok = os.path.exists(os.path.join(src, w))
                tests.append((ok, "README.md command '%s': '%s' exists" % (line.strip(), w), ''))
        for i, w in enumerate(words):
            if os.path.basename(w) == 'ferry' and i + 1 < len(words) and not words[i + 1].startswith('-'):
                cmd = words[i + 1]
                tests.append((cmd in top, "README.md command '%s': 'ferry %s' exists" % (line.strip(), cmd),
                              'ferry --help lists: ' + ' '.join(top)))
                subs = subcommands(cmd) if cmd in top else set()
                if subs and i + 2 < len(words) and not words[i + 2].startswith('-'):
                    tests.append((words[i + 2] in subs, "README.md command '%s': 'ferry %s %s' exists"
                                  % (line.strip(), cmd, words[i + 2]), ''))

for target in re.findall(r'\]\(([^)#\s]+)\)', text):
    if '://' in target or target.startswith('mailto:'):
        continue
    tests.append((os.path.exists(os.path.join(base, target)), "README.md link '%s' exists" % target, ''))

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
