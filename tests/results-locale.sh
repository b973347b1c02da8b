#!/usr/bin/env bash
# Results files are the same bytes whatever the user's locale: under a comma-decimal locale
# (de_DE, built here with localedef so the host needs no generated locales) the writer still
# writes "0.5", and the reader still reads it (jansson converts around the locale's decimal point).
set -euo pipefail

build="${FERRY_BUILD_DIR:?}"
helper="$build/tests/test-results-model"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v localedef >/dev/null || [ ! -f /usr/share/i18n/locales/de_DE ]; then
	echo "SKIP: localedef or the de_DE locale source is missing (Debian package 'locales')"
	exit 77
fi
mkdir -p "$tmp/locale"
# localedef exits 1 for warnings while still writing the locale
localedef -i de_DE -f UTF-8 "$tmp/locale/de_DE.UTF-8" >/dev/null 2>&1 || true
if [ ! -e "$tmp/locale/de_DE.UTF-8/LC_NUMERIC" ]; then
	echo "SKIP: localedef could not build de_DE.UTF-8"
	exit 77
fi

LC_ALL=C "$helper" --write-sample "$tmp/c.json" | grep -qx "decimal point: '.'"
out="$(LOCPATH="$tmp/locale" LC_ALL=de_DE.UTF-8 "$helper" --write-sample "$tmp/de.json")"
if [ "$out" != "decimal point: ','" ]; then
	echo "FAIL: the helper did not run under the comma locale: $out"
	exit 1
fi
cmp "$tmp/c.json" "$tmp/de.json"
grep -q '"transfer": 2.0499999999999998' "$tmp/de.json"
echo "ok: written under de_DE.UTF-8 the file is byte-identical to the C locale's"

# read under the comma locale and write again: nothing changes
LOCPATH="$tmp/locale" LC_ALL=de_DE.UTF-8 "$helper" --rewrite "$tmp/de.json" "$tmp/de2.json" >/dev/null
cmp "$tmp/c.json" "$tmp/de2.json"
echo "ok: read and rewritten under de_DE.UTF-8, still byte-identical"
