#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a results file of N cells by repeating the cells of a template (tests/golden/report.json)
with a unique dataset axis per copy: gen-results.py TEMPLATE N OUT."""
import copy
import json
import sys


def main():
    template, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(template) as f:
        doc = json.load(f)
    base = doc["cells"]
    cells = []
    for i in range(n):
        c = copy.deepcopy(base[i % len(base)])
        copy_no = i // len(base)
        axes = c["axes"]
        key = "dataset" if "dataset" in axes else next(iter(axes))
        axes[key] = "%s-%d" % (axes[key], copy_no)
        c["id"] = ",".join("%s=%s" % kv for kv in axes.items())
        cells.append(c)
    doc["cells"] = cells
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
