#!/usr/bin/env bash
# `meson install` installs everything an installed ferry needs (binary, man page, schemas next
# to the example plans, the guest's init files, docs, LICENSE, the CI setup script); an
# installed binary reads the guest's files from its data directory, never from the source tree
# it was built from; debian/control's runtime Depends and scripts/install-ferry.sh's list agree.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix="$(meson introspect --buildoptions "$build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')"
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/d" >/dev/null
root="$tmp/d$prefix"
share="$root/share/ferry"
for f in bin/ferry share/man/man1/ferry.1 share/doc/ferry/LICENSE share/doc/ferry/README.md \
	share/doc/ferry/ci.md share/doc/ferry/examples/github-workflow.yml \
	share/ferry/scripts/install-ferry.sh; do
	[ -f "$root/$f" ] || fail "meson install does not install $f"
done
[ -x "$share/scripts/install-ferry.sh" ] || fail "install-ferry.sh is installed without its x bit"
# what libvirt starts in place of virtiofsd (confined to unprivileged ids): without it an
# installed ferry skips virtiofs shares
libexec="$(meson introspect --buildoptions "$build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libexecdir"))')"
[ -x "$root/$libexec/ferry/ferry-virtiofsd" ] || fail "meson install does not install $libexec/ferry/ferry-virtiofsd"
# the built-in guest's verify lister, which `ferry guest build` puts into the initramfs
[ -x "$root/$libexec/ferry/ferry-sum" ] || fail "meson install does not install $libexec/ferry/ferry-sum"
for f in "$src"/schema/*.json; do
	cmp -s "$f" "$share/schema/${f##*/}" || fail "schema ${f##*/} is not installed"
done
for f in "$src"/plans/*.yaml; do
	cmp -s "$f" "$share/plans/${f##*/}" || fail "plan ${f##*/} is not installed"
done
for f in "$src"/fixtures/guest/*; do
	cmp -s "$f" "$share/guest/${f##*/}" || fail "guest file ${f##*/} is not installed"
done
for sh in bash:bash-completion/completions/ferry zsh:zsh/vendor-completions/_ferry \
	fish:fish/vendor_completions.d/ferry.fish; do
	"$build/ferry" completion "${sh%%:*}" | cmp -s - "$root/share/${sh#*:}" ||
		fail "the ${sh%%:*} completion is not installed as share/${sh#*:}"
done
echo "ok: meson install installs the binary, ferry-virtiofsd, ferry-sum, ferry.1, schemas, plans, guest files, docs, LICENSE, completions"

# the installed plans' `$schema` line names the installed schema
line="$(grep -m1 'yaml-language-server: \$schema=' "$share/plans/quickstart.yaml")"
rel="${line##*\$schema=}"
[ -f "$share/plans/$rel" ] || fail "the installed quickstart's \$schema=$rel does not resolve"
echo "ok: the installed plans' \$schema=$rel resolves to the installed schema"

# An installed binary outside its build tree reads the guest's files from its data directory
# ($prefix/share/ferry/guest, absent under --destdir), not from the source tree it came from.
if [ -e "$prefix/share/ferry/guest/init" ]; then
	echo "note: $prefix/share/ferry/guest exists on this host: the installed-path check is skipped"
else
	cp "$root/bin/ferry" "$tmp/ferry"
	st=0
	"$tmp/ferry" guest build --cache-dir "$tmp/cache" >"$tmp/out" 2>&1 || st=$?
	[ "$st" -ne 0 ] || fail "an installed ferry built a guest without its installed files"
	grep -q "cannot read guest fixture '$prefix/share/ferry/guest/" "$tmp/out" ||
		{ cat "$tmp/out"; fail "an installed ferry does not look for $prefix/share/ferry/guest"; }
	! grep -q "$src" "$tmp/out" || { cat "$tmp/out"; fail "an installed ferry read the source tree"; }
	echo "ok: an installed ferry looks for the guest's files in $prefix/share/ferry/guest only"
fi

# runtime dependencies: one list in debian/control and in scripts/install-ferry.sh
deps="$(sed -n '/^Package: ferry/,/^Description/p' "$src/debian/control" |
	sed -n '/^Depends:/,/^[A-Z][a-z]*:/p' | sed '$d' | sed 's/^Depends://' | tr ',' '\n' |
	sed 's/ //g; /^$/d; /^\${/d' | sort)"
script="$(sed -n '/^runtime_packages=(/,/^)/p' "$src/scripts/install-ferry.sh" | sed '1d;$d' |
	tr ' \t' '\n\n' | sed '/^$/d' | sort)"
[ -n "$deps" ] || fail "no Depends in debian/control"
[ "$deps" = "$script" ] || {
	diff <(echo "$deps") <(echo "$script") || true
	fail "debian/control's Depends and install-ferry.sh's runtime_packages differ"
}
echo "ok: debian/control and install-ferry.sh name the same $(echo "$deps" | wc -l) runtime packages"
bash -n "$src/scripts/install-ferry.sh"
