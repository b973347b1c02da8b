#!/usr/bin/env python3
"""The variance comparison of bench/restore-variance.sh: restored against booted guests.

Reads DIR/{boot,restore}-ROUND.json (ferry results of the quickstart's cells, one run per cell
per guest) and prints, on the log of each run's total, per kind:
  - within: the pooled variance between the guests of one invocation (for restore: guests of one
    saved state), cells pooled (each cell and invocation centred on its own mean);
  - between: the variance component between invocations (of the invocation means, less what the
    within part explains), cells pooled;
  - per cell: the median total of each kind, and each kind's within SD;
and restore/boot of the within SD and of the total SD (within + between), each with a 90%
bootstrap interval (guests resampled within their invocation, invocations resampled for the
total; a guest's cells stay together, 4000 resamples, seed 29).
Then precision per minute, projected from these measurements (not a run to 5%): for each of the
quickstart's comparisons (agent vs image within a disk and dataset, paired by guest), the SD of
the log ratio between guests of one invocation, the blocks a paired 95% interval needs to get
its half-width to 5% (t x SD / sqrt(n) <= ln 1.05), and that many blocks at the measured wall
time of one block (from the first run of block 2 to the first run of block 3: one guest start
and its eight runs), plus, for restore, the one boot and save a run makes first.
Usage: bench/restore-variance.py DIR
"""
import glob
import json
import math
import os
import random
import statistics
import sys
from datetime import datetime

KINDS = ("boot", "restore")


def load(d):
    """{kind: {round: {boot id: {cell: ln total}}}}, and the fresh values seen per kind."""
    data = {k: {} for k in KINDS}
    seen = {k: set() for k in KINDS}
    for k in KINDS:
        for f in sorted(glob.glob(os.path.join(d, "%s-*.json" % k))):
            rnd = int(os.path.basename(f)[len(k) + 1:-5])
            r = json.load(open(f))
            inv = data[k].setdefault(rnd, {})
            for c in r["cells"]:
                for x in c["runs"]:
                    if x.get("warmup") or x.get("total") is None or x.get("boot") is None:
                        continue
                    seen[k].add(x.get("fresh"))
                    inv.setdefault(x["boot"], {})[c["id"]] = math.log(x["total"])
    return data, seen


def within_var(kdata):
    """Pooled within-invocation variance (cells pooled) and its degrees of freedom."""
    ss, df = 0.0, 0
    for inv in kdata.values():
        cells = set().union(*(g.keys() for g in inv.values())) if inv else set()
        for c in cells:
            v = [g[c] for g in inv.values() if c in g]
            if len(v) < 2:
                continue
            m = sum(v) / len(v)
            ss += sum((y - m) ** 2 for y in v)
            df += len(v) - 1
    return (ss / df if df else float("nan")), df


def between_var(kdata, w):
    """The between-invocation variance component (cells pooled), clipped at 0."""
    comps = []
    cells = set()
    for inv in kdata.values():
        for g in inv.values():
            cells |= set(g)
    for c in cells:
        means, ns = [], []
        for inv in kdata.values():
            v = [g[c] for g in inv.values() if c in g]
            if v:
                means.append(sum(v) / len(v))
                ns.append(len(v))
        if len(means) >= 2:
            comps.append(statistics.variance(means) - w / statistics.mean(ns))
    return max(0.0, statistics.mean(comps)) if comps else float("nan")


def resample(kdata, rng, clusters):
    """Guests resampled within each invocation; invocations too when clusters."""
    rounds = list(kdata)
    if clusters:
        rounds = [rng.choice(rounds) for _ in rounds]
    out = {}
    for i, rnd in enumerate(rounds):
        guests = list(kdata[rnd].values())
        out[i] = {j: rng.choice(guests) for j in range(len(guests))}
    return out


def interval(vals, lo=0.05, hi=0.95):
    v = sorted(x for x in vals if not math.isnan(x))
    if not v:
        return float("nan"), float("nan")
    return v[int(lo * (len(v) - 1))], v[int(hi * (len(v) - 1))]


def main():
    d = sys.argv[1]
    data, seen = load(d)
    for k in KINDS:
        if not data[k]:
            sys.exit("restore-variance.py: no %s-*.json in %s" % (k, d))
    print("fresh values recorded in the runs: boot invocations %s, restore invocations %s"
          % (sorted(map(str, seen["boot"])), sorted(map(str, seen["restore"]))))
    stats = {}
    for k in KINDS:
        w, df = within_var(data[k])
        b = between_var(data[k], w)
        n = sum(len(inv) for inv in data[k].values())
        stats[k] = (w, b)
        print("%-8s guests %3d in %d invocations: within SD %.4f (df %d), between-invocation"
              " SD %.4f, total SD %.4f (log of total)"
              % (k, n, len(data[k]), math.sqrt(w), df, math.sqrt(b), math.sqrt(w + b)))
    cells = sorted({c for inv in data["boot"].values() for g in inv.values() for c in g})
    print("per cell: median total (s) and within SD (log), boot | restore, restore/boot median")
    for c in cells:
        row = []
        for k in KINDS:
            v = [g[c] for inv in data[k].values() for g in inv.values() if c in g]
            one = {r: inv for r, inv in data[k].items()}
            w, _ = within_var({r: {b: {c: g[c]} for b, g in inv.items() if c in g}
                               for r, inv in one.items()})
            row.append((math.exp(statistics.median(v)), math.sqrt(w)))
        print("  %-48s %6.3f %.3f | %6.3f %.3f | %.2f"
              % (c, row[0][0], row[0][1], row[1][0], row[1][1], row[1][0] / row[0][0]))
    rng = random.Random(29)
    rw, rt = [], []
    for _ in range(4000):
        s = {}
        for k in KINDS:
            w, _ = within_var(resample(data[k], rng, False))
            dt = resample(data[k], rng, True)
            wt, _ = within_var(dt)
            s[k] = (w, wt + between_var(dt, wt))
        # a resample of identical guests has no variance: no ratio from it
        if s["boot"][0] > 0:
            rw.append(math.sqrt(s["restore"][0] / s["boot"][0]))
        if s["boot"][1] > 0:
            rt.append(math.sqrt(s["restore"][1] / s["boot"][1]))
    (bw, bb), (qw, qb) = stats["boot"], stats["restore"]
    lo, hi = interval(rw)
    print("restore/boot within SD: %.2f [90%% bootstrap %.2f to %.2f]"
          % (math.sqrt(qw / bw), lo, hi))
    lo, hi = interval(rt)
    print("restore/boot total SD: %.2f [90%% bootstrap %.2f to %.2f]"
          % (math.sqrt((qw + qb) / (bw + bb)), lo, hi))
    precision(d, data)


def ts(t):
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def block_walls(d, kind):
    """Per invocation: (one block's wall, seconds before block 1's first run)."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, "%s-*.json" % kind))):
        r = json.load(open(f))
        first = {}
        for c in r["cells"]:
            for x in c["runs"]:
                if x.get("started") and x.get("block"):
                    b = x["block"]
                    first[b] = min(first.get(b, math.inf), ts(x["started"]))
        if 1 in first and 2 in first and 3 in first:
            out.append((first[3] - first[2], first[1] - ts(r["provenance"]["started"])))
    return out


def t975(df):
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) if df > 0 else math.inf


def precision(d, data):
    print("precision per minute (projected from the measured SDs and block times):")
    walls = {k: block_walls(d, k) for k in KINDS}
    for k in KINDS:
        if not walls[k]:
            print("  %s: no invocation with 3 blocks and start times" % k)
            return
    per = {k: statistics.median(w for w, _ in walls[k]) for k in KINDS}
    lead = {k: statistics.median(l for _, l in walls[k]) for k in KINDS}
    for k in KINDS:
        print("  %-8s one block %.1f s (median of %d), before block 1 %.1f s"
              % (k, per[k], len(walls[k]), lead[k]))
    cells = sorted({c for inv in data["boot"].values() for g in inv.values() for c in g})
    pairs = sorted({(c.replace("method=agent", "method=image"), c) for c in cells
                    if "method=agent" in c})
    worst = {k: 0 for k in KINDS}
    for a, b in pairs:
        row = []
        for k in KINDS:
            dd = {r: {g: {"d": v[b] - v[a]} for g, v in inv.items() if a in v and b in v}
                  for r, inv in data[k].items()}
            w, df = within_var(dd)
            sd = math.sqrt(w)
            n = 2
            while t975(n - 1) * sd / math.sqrt(n) > math.log(1.05) and n < 100000:
                n += 1
            worst[k] = max(worst[k], n)
            row.append("SD %.3f -> %d blocks, %.0f min" % (sd, n, (lead[k] + n * per[k]) / 60))
        print("  %-40s boot %s | restore %s" % (a.split(",", 1)[1].replace(",method=image", ""),
                                                 row[0], row[1]))
    print("  every comparison to 5%%: boot %d blocks, %.0f min | restore %d blocks, %.0f min"
          % (worst["boot"], (lead["boot"] + worst["boot"] * per["boot"]) / 60,
             worst["restore"], (lead["restore"] + worst["restore"] * per["restore"]) / 60))


if __name__ == "__main__":
    main()
