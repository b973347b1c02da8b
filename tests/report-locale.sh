#!/usr/bin/env bash
# Reports are the same bytes whatever the user's locale: rendered by a process running under a
# comma-decimal locale (de_DE, built here with localedef so the host needs no generated locales),
# every report equals the golden file (rendered in the C locale), so JUnit times and Markdown
# numbers keep their dots.
set -euo pipefail

src="${FERRY_SOURCE_DIR:?}"
build="${FERRY_BUILD_DIR:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v localedef >/dev/null || [ ! -f /usr/share/i18n/locales/de_DE ]; then
	echo "SKIP: localedef or the de_DE locale source is missing (Debian package 'locales')"
	exit 77
fi
mkdir -p "$tmp/locale" "$tmp/out"
# localedef exits 1 for warnings while still writing the locale
localedef -i de_DE -f UTF-8 "$tmp/locale/de_DE.UTF-8" >/dev/null 2>&1 || true
if [ ! -e "$tmp/locale/de_DE.UTF-8/LC_NUMERIC" ]; then
	echo "SKIP: localedef could not build de_DE.UTF-8"
	exit 77
fi

out="$(LOCPATH="$tmp/locale" LC_ALL=de_DE.UTF-8 "$build/tests/test-reporters" --render "$tmp/out")"
if [ "$out" != "decimal point: ','" ]; then
	echo "FAIL: the helper did not run under the comma locale: $out"
	exit 1
fi
for f in report.xml report.md report.bmf.json report.gab.json report.json; do
	cmp "$src/tests/golden/$f" "$tmp/out/$f"
done
grep -q 'time="2.850"' "$tmp/out/report.xml"
grep -q $'1.16\xc2\xa0s ± 0.08' "$tmp/out/report.md"
echo "ok: rendered under de_DE.UTF-8, every report equals its C-locale golden file"

# and the unit test's own check, now that a comma locale exists
LOCPATH="$tmp/locale" LC_ALL=de_DE.UTF-8 FERRY_SOURCE_DIR="$src" \
	"$build/tests/test-reporters" -p /reporters/comma-locale | tee "$tmp/tap"
if grep -q SKIP "$tmp/tap"; then
	echo "FAIL: the comma-locale unit test skipped although de_DE.UTF-8 exists"
	exit 1
fi
