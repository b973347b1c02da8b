#!/usr/bin/python3
"""One statistic everywhere: for every cell of a results file with measured runs, the Markdown
table, the HTML page, the JUnit properties, BMF and github-action-benchmark give the same central
value (the mean total) and the same interval (its 95% CI), each to the precision it prints.

  report-agree.py RESULTS.json REPORT.md REPORT.html REPORT.junit.xml REPORT.bmf.json REPORT.gab.json
"""
import json
import math
import re
import sys
import xml.etree.ElementTree as ET

import html5lib

res, md, page, junit, bmf, gab = sys.argv[1:7]
r = json.load(open(res))
cells = [c for c in r["cells"]
         if c.get("stats") and c["stats"]["total"]["n"] and c["stats"]["total"]["median"] is not None]
if not cells:
    sys.exit("FAIL: no cell with measured runs in " + res)


def fail(msg):
    sys.exit("FAIL: " + msg)


def near(a, b, rel, what, absolute=0.0):
    if a is None or b is None:
        if a is not None or b is not None:
            fail("%s: %r against the results' %r" % (what, a, b))
        return
    if abs(a - b) > rel * max(abs(b), 1e-9) + absolute + 1e-12:
        fail("%s: %r against the results' %r" % (what, a, b))


def clean(s):
    return "".join("\\x%02x" % ord(ch) if ord(ch) < 0x20 and ch not in "\t\n" else ch for ch in s)


# JUnit: the suite's properties
props = {}
for ts in ET.parse(junit).getroot().iter("testsuite"):
    pr = {p.get("name"): p.get("value") for p in ts.iter("property")}
    props[pr.get("cell.id")] = pr
b = json.load(open(bmf))
g = {e["name"]: e for e in json.load(open(gab))}
doc = html5lib.parse(open(page, "rb").read(), namespaceHTMLElements=False)
strips = {e.get("data-cell"): e for e in doc.iter() if e.get("class") == "cell" and e.get("data-cell")}
text = open(md).read()

for c in cells:
    t = c["stats"]["total"]
    mean, lo, hi = t["mean"], t["ci95_low"], t["ci95_high"]
    cid = c["id"]
    # JUnit, 9 significant digits
    p = props.get(clean(cid))
    if p is None:
        fail("no JUnit suite for " + cid)
    near(float(p["stats.total.mean"]), mean, 1e-8, cid + " JUnit mean")
    if lo is not None:
        near(float(p["stats.total.ci_low"]), lo, 1e-8, cid + " JUnit CI low")
        near(float(p["stats.total.ci_high"]), hi, 1e-8, cid + " JUnit CI high")
    # BMF latency, ns; the lower bound cut at 0
    lat = b[clean(cid)]["latency"]
    near(lat["value"] / 1e9, mean, 1e-9, cid + " BMF value")
    if lo is not None:
        near(lat["lower_value"] / 1e9, max(lo, 0), 1e-9, cid + " BMF lower_value")
        near(lat["upper_value"] / 1e9, hi, 1e-9, cid + " BMF upper_value")
    # github-action-benchmark: value and "± half-width", the half-width to 6 decimals (%.6f):
    # within half a unit of the last place it prints, whatever its size
    near(g[clean(cid)]["value"], mean, 1e-9, cid + " GAB value")
    if lo is not None:
        half = float(g[clean(cid)]["range"].split()[-1])
        near(half, (hi - lo) / 2, 0, cid + " GAB range", absolute=0.5e-6)
    # HTML: the strip plot row
    e = strips.get(clean(cid))
    if e is None:
        fail("no HTML strip row for " + cid)
    near(float(e.get("data-mean")), mean, 1e-8, cid + " HTML mean")
    if lo is not None:
        near(float(e.get("data-ci-low")), lo, 1e-8, cid + " HTML CI low")
        near(float(e.get("data-ci-high")), hi, 1e-8, cid + " HTML CI high")

# Markdown: every "VALUE UNIT ± HALF" of the main tables is some cell's mean and half-width, to
# the 3 significant digits it prints, and every cell's mean is there
shown = []
for m in re.finditer(r"\| \**([0-9.]+)\u00a0(ms|s)(?: ± ([0-9.]+))?\**<br>", text):
    scale = 1e-3 if m.group(2) == "ms" else 1
    shown.append((float(m.group(1)) * scale, float(m.group(3)) * scale if m.group(3) else None))
for c in cells:
    t = c["stats"]["total"]
    half = (t["ci95_high"] - t["ci95_low"]) / 2 if t["ci95_low"] is not None else None
    ok = [s for s in shown if abs(s[0] - t["mean"]) <= 0.006 * t["mean"] and
          (half is None) == (s[1] is None) and (half is None or abs(s[1] - half) <= 0.006 * half + 0.006 * t["mean"])]
    if not ok:
        fail("the Markdown table shows no '%.4g s ± %s' for %s (shown: %s)" % (t["mean"], half, c["id"], shown))
print("ok: %d cells: Markdown, HTML, JUnit, BMF and github-action-benchmark give the same mean "
      "total and 95%% CI" % len(cells))
