#!/usr/bin/env python3
"""Draws bench/curve.sh's CSV: CPU ms per sample against the number of busy tasks, one line
per tool (steady state solid, start-up included dashed), the busy tasks' own CPU per second
as the floor; log-log, with 0 busy tasks drawn at 1 and labelled 0.

    curve-plot.py CURVE.csv OUT.png [TITLE]
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

COLORS = {"record": "tab:blue", "serve": "tab:orange", "top": "tab:green",
          "top (terminal)": "tab:red", "busy tasks": "black"}


def number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    # A log axis has no place for 0 (the busy tasks' CPU when there are none).
    return v if math.isfinite(v) and v > 0 else None


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    tools = []
    for r in rows:
        if r["tool"] not in tools:
            tools.append(r["tool"])
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    xs_all = set()
    for tool in tools:
        pts = sorted((int(r["busy"]), number(r["cpu_ms_per_sample_steady"]),
                      number(r["cpu_ms_per_sample_total"])) for r in rows if r["tool"] == tool)
        xs = [max(k, 1) for k, _, _ in pts]
        xs_all.update(k for k, _, _ in pts)
        color = COLORS.get(tool)
        if tool == "busy tasks":
            ax.plot(xs, [s for _, s, _ in pts], color=color, marker="s", linewidth=1.5,
                    label="busy tasks' own CPU (per 1 s sample)")
            continue
        ax.plot(xs, [s for _, s, _ in pts], color=color, marker="o", linewidth=2,
                label=f"{tool}, steady state")
        ax.plot(xs, [t for _, _, t in pts], color=color, marker=".", linewidth=1,
                linestyle="--", alpha=0.7, label=f"{tool}, start-up included")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = sorted(xs_all)
    ax.xaxis.set_major_locator(FixedLocator([max(k, 1) for k in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{k:,}" for k in ticks])
    ax.set_xlabel("busy tasks (log scale; 0 drawn at 1)")
    ax.set_ylabel("CPU ms per sample (log scale)")
    ax.grid(True, which="both", alpha=0.3)
    if len(sys.argv) == 4 and sys.argv[3]:
        ax.set_title(sys.argv[3], fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(sys.argv[2])


if __name__ == "__main__":
    main()
