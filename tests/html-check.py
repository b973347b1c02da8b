#!/usr/bin/python3
"""Check an HTML report of ferry against the data it was made from.

  html-check.py valid FILE                     the file parses as HTML5 with no error (html5lib,
                                               strict) and names nothing outside itself
  html-check.py run DOM RESULTS.json           the DOM a browser built (chromium --dump-dom) has
                                               a strip plot row and phase bars per measured cell
                                               carrying its mean and 95% CI, one point per
                                               measured run, a tooltip on every mark
  html-check.py compare DOM COMPARE.json       one change mark per total row, with its change,
                                               bounds, threshold and verdict
  html-check.py trend DOM STEP RESULTS.json... per cell one point per run carrying its median,
                                               and a change of level at run STEP (0: none)
"""
import json
import math
import sys

import html5lib

SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def tag(e):
    return e.tag.split("}")[-1]


def close(a, b, what):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        a = None
    if a is None or b is None:
        if a is not None or b is not None:
            fail("%s: %r in the page, %r in the data" % (what, a, b))
        return
    if abs(a - b) > 1e-6 * max(abs(b), 1e-12):
        fail("%s: %r in the page, %r in the data" % (what, a, b))


def num(e, attr):
    v = e.get(attr)
    if v is None:
        fail("%s has no %s" % (tag(e), attr))
    return None if v in ("nan", "-nan") else float(v)


def parse_dom(path):
    doc = html5lib.parse(open(path, "rb").read(), namespaceHTMLElements=False)
    if any(tag(e) == "script" for e in doc.iter()):
        fail("the page has a <script> element")
    return doc


def by_class(doc, name, cls):
    return [e for e in doc.iter() if tag(e) == name and cls in (e.get("class") or "").split()]


def titled(e, what):
    t = [c for c in e if tag(c) == "title" and (c.text or "").strip()]
    if not t:
        fail("%s has no <title> (tooltip with its numbers)" % what)


def check_valid(path):
    p = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    try:
        doc = p.parse(open(path, "rb").read())
    except Exception as e:  # html5lib raises ParseError at the first error in strict mode
        fail("%s is not valid HTML5: %s" % (path, e))
    if p.errors:
        fail("%s: parse errors %s" % (path, p.errors[:5]))
    for e in doc.iter():
        if tag(e) in ("script", "link", "iframe", "object", "embed", "img"):
            fail("%s has a <%s> element" % (path, tag(e)))
        for a in ("src", "href", "xlink:href", "action"):
            v = e.get(a)
            if v is not None and not v.startswith("#"):
                fail("%s: <%s %s=%r> refers outside the page" % (path, tag(e), a, v))
    print("ok: %s is valid HTML5, self-contained" % path)


def clean(s):
    """What report_clean_text() shows of a string: controls as escapes, \r\n as \n."""
    out = []
    s = s.replace("\r\n", "\n")
    for ch in s:
        o = ord(ch)
        if ch in "\t\n":
            out.append(ch)
        elif o < 0x20 or o == 0x7F:
            out.append("\\r" if ch == "\r" else "\\x%02x" % o)
        elif 0x80 <= o <= 0x9F or o in (0xFFFE, 0xFFFF):
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    return "".join(out)


def measured(run):
    return not run["warmup"] and run["integrity_ok"] and run["total"] is not None


def check_run(dom, results):
    r = json.load(open(results))
    doc = parse_dom(dom)
    rows = {e.get("data-cell"): e for e in by_class(doc, "g", "cell")}
    bars = {e.get("data-cell"): e for e in by_class(doc, "g", "phases")}
    n = 0
    for c in r["cells"]:
        st = c.get("stats")
        if not st or not st["total"]["n"] or st["total"]["median"] is None:
            if clean(c["id"]) in rows:
                fail("cell without measured runs has a strip row: " + c["id"])
            continue
        n += 1
        g = rows.get(clean(c["id"]))
        if g is None:
            fail("no strip plot row for cell " + c["id"])
        t = st["total"]
        close(num(g, "data-mean"), t["mean"], c["id"] + " mean")
        close(num(g, "data-ci-low"), t["ci95_low"], c["id"] + " CI low")
        close(num(g, "data-ci-high"), t["ci95_high"], c["id"] + " CI high")
        runs = sorted(float(p.get("data-total")) for p in g.iter() if tag(p) == "circle" and p.get("class") == "run")
        want = sorted(x["total"] for x in c["runs"] if measured(x))
        if len(runs) != len(want):
            fail("%s: %d run points, %d measured runs" % (c["id"], len(runs), len(want)))
        for a, b in zip(runs, want):
            close(a, b, c["id"] + " run total")
        for p in g.iter():
            if tag(p) in ("circle", "line"):
                titled(p, "a mark of " + c["id"])
        b = bars.get(clean(c["id"]))
        if b is None:
            fail("no phase bar for cell " + c["id"])
        for rect in (x for x in b.iter() if tag(x) == "rect"):
            titled(rect, "a phase bar of " + c["id"])
            close(num(rect, "data-mean"), st["phases"][rect.get("data-phase")]["mean"],
                  "%s phase %s mean" % (c["id"], rect.get("data-phase")))
    if len(rows) != n or n == 0:
        fail("%d strip plot rows for %d measured cells" % (len(rows), n))
    text = "".join(doc.itertext())
    for c in r["cells"]:
        if clean(c["id"]) not in text:
            fail("the page does not name cell %r as text" % c["id"])
    print("ok: %d measured cells with their mean, CI, runs and phases in the page" % n)


def check_compare(dom, cmp_json):
    c = json.load(open(cmp_json))
    doc = parse_dom(dom)
    marks = {(e.get("data-cell"), e.get("data-metric")): e for e in by_class(doc, "g", "change")}
    n = 0
    for row in c["rows"]:
        if row["metric"] != "total" and row["verdict"] not in ("regressed", "improved"):
            continue
        n += 1
        g = marks.get((row["cell"], row["metric"]))
        if g is None:
            fail("no change mark for %s %s" % (row["cell"], row["metric"]))
        close(num(g, "data-change"), row["change"], row["cell"] + " change")
        close(num(g, "data-ci-low"), row["bound_low"], row["cell"] + " bound low")
        close(num(g, "data-ci-high"), row["bound_high"], row["cell"] + " bound high")
        close(num(g, "data-threshold"), row["threshold"], row["cell"] + " threshold")
        if g.get("data-verdict") != row["verdict"]:
            fail("%s: verdict %s in the page, %s in the data" % (row["cell"], g.get("data-verdict"), row["verdict"]))
        titled(g, "the change of " + row["cell"])
        if not any(tag(x) == "rect" and x.get("class") == "thr" for x in g.iter()):
            fail("no threshold band for " + row["cell"])
    if n == 0 or len(marks) != n:
        fail("%d change marks for %d rows shown" % (len(marks), n))
    print("ok: %d changes with their bounds, threshold and verdict in the page" % n)


def check_trend(dom, step, files):
    doc = parse_dom(dom)
    series = {}
    for f in files:
        r = json.load(open(f))
        for c in r["cells"]:
            st = c.get("stats")
            if st and st["total"]["n"] and st["total"]["median"] is not None:
                series.setdefault(c["id"], []).append((r["provenance"]["started"], st["total"]["median"]))
    charts = {e.get("data-cell"): e for e in doc.iter() if tag(e) == "div" and e.get("data-cell")}
    for cell, pts in series.items():
        d = charts.get(cell)
        if d is None:
            fail("no trend chart for " + cell)
        got = [num(p, "data-median") for p in d.iter() if tag(p) == "circle" and p.get("class") == "pt"]
        want = [m for _, m in sorted(pts)]
        if len(got) != len(want):
            fail("%s: %d points in the page, %d runs" % (cell, len(got), len(want)))
        for a, b in zip(got, want):
            close(a, b, cell + " median")
        cps = [int(x.get("data-at")) for x in d.iter() if tag(x) == "line" and x.get("class") == "cp"]
        if cps != ([step - 1] if step else []):
            fail("%s: changes of level at %s, expected at run %d" % (cell, cps, step))
        if not [x for x in d.iter() if tag(x) == "line" and x.get("class") == "level"]:
            fail(cell + ": no level line")
        for p in d.iter():
            if tag(p) == "g" and p.get("class") == "point":
                titled(p, "a point of " + cell)
    if not series:
        fail("no cell with measured runs in the trend's files")
    print("ok: %d trend series with every median and change of level in the page" % len(series))


def main():
    kind = sys.argv[1]
    if kind == "valid":
        check_valid(sys.argv[2])
    elif kind == "run":
        check_run(sys.argv[2], sys.argv[3])
    elif kind == "compare":
        check_compare(sys.argv[2], sys.argv[3])
    elif kind == "trend":
        check_trend(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    else:
        fail("unknown check " + kind)


main()
