#!/usr/bin/env python3
"""Summarise a bench/precision.sh directory: for each invocation (KIND-ROUND.log with its
KIND-ROUND.json), the widest boot-level half-width after each block (ferry's own --verbose
"block B: widest half-width H% after S s of blocks" lines), the stop reason and the blocks
from the results' design section, the wall time (walls), and when 20%, 10% and 5% were first
reached; then the median per kind and restore/boot."""
import json
import re
import statistics
import sys
from pathlib import Path

LINE = re.compile(r"block (\d+): (?:widest half-width ([0-9.]+)%|no half-width yet) "
                  r"after ([0-9.]+) s of blocks")
TARGETS = (20.0, 10.0, 5.0)


def curve(log):
    pts = []
    for m in LINE.finditer(log.read_text()):
        hw = float(m.group(2)) if m.group(2) else float("inf")
        pts.append((int(m.group(1)), hw, float(m.group(3))))
    return pts


def first_reach(pts, target, stop):
    """The seconds of blocks at the first block whose half-width is surely within target: the
    printed figure is rounded to 0.1%, so a printed 5.0% may be 5.04%; that block counts only
    when it is where ferry's own stop rule (exact) stopped on that target (stop: its block)."""
    for b, hw, s in pts:
        if hw + 0.05 <= target or b == stop:
            return s
    return None


def main(d):
    d = Path(d)
    walls = {}
    for row in (d / "walls").read_text().splitlines():
        kind, rnd, wall, load = row.split()
        walls[(kind, rnd)] = (float(wall) if wall != "?" else float("nan"), load)
    reach = {k: {t: [] for t in TARGETS} for k in ("boot", "restore")}
    finals = {"boot": [], "restore": []}
    for (kind, rnd), (wall, load) in sorted(walls.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        pts = curve(d / f"{kind}-{rnd}.log")
        res = json.loads((d / f"{kind}-{rnd}.json").read_text())
        des = res.get("design", {})
        print(f"{kind} round {rnd}: wall {wall:.1f} s (load at end {load}), "
              f"{des.get('blocks')} blocks, stop {des.get('stop')}, "
              f"final widest half-width {100 * des.get('halfwidth', float('nan')):.1f}%")
        print("  block  half-width  s of blocks")
        for b, hw, s in pts:
            print(f"  {b:5d}  {hw:9.1f}%  {s:11.1f}")
        for t in TARGETS:
            hit = (des.get("stop") == "halfwidth-reached" and des.get("until") is not None
                   and abs(100 * des["until"] - t) < 1e-9)
            s = first_reach(pts, t, des.get("blocks") if hit else None)
            reach[kind][t].append(s)
            print(f"  {t:4.0f}%: " + (f"reached after {s:.1f} s of blocks" if s is not None
                                      else "not reached"))
        finals[kind].append((pts[-1][1] if pts else float("inf"), pts[-1][2] if pts else 0.0))
    print()
    print("median over rounds (not reached counts as not reached; a median needs every round):")
    print(f"{'':8s}" + "".join(f"{f'to {t:.0f}%':>12s}" for t in TARGETS) + f"{'final hw':>10s}")
    med = {}
    for kind in ("boot", "restore"):
        cells = []
        for t in TARGETS:
            v = reach[kind][t]
            if v and all(x is not None for x in v):
                m = statistics.median(v)
                med[(kind, t)] = m
                cells.append(f"{m:10.1f} s")
            else:
                n = sum(x is not None for x in v)
                cells.append(f"{n}/{len(v)} reached".rjust(12))
        fh = statistics.median(h for h, _ in finals[kind]) if finals[kind] else float("nan")
        print(f"{kind:8s}" + "".join(cells) + f"{fh:9.1f}%")
    for t in TARGETS:
        if ("boot", t) in med and ("restore", t) in med and med[("boot", t)] > 0:
            print(f"restore/boot time to {t:.0f}%: {med[('restore', t)] / med[('boot', t)]:.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: precision.py DIR")
    main(sys.argv[1])
