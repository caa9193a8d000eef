#!/usr/bin/env python3
"""Charts of a `clattn bench --json` file.

    python3 cli/plot_bench.py out.json --out-dir docs/figures [--prefix bench]

writes
  <prefix>_time.png      time vs N, one panel per path: measured medians with
                         their min-max spread, the model's roofline prediction
                         as a dashed line, rows predicted out of memory marked
                         with a red x at their predicted time; a last panel
                         for model-only rows (the seed's full shape when the
                         bench ran scaled down on a CPU);
  <prefix>_roofline.png  measured rows at their arithmetic intensity (the
                         model's FLOPs / bytes for the path) against the
                         device's bandwidth and compute roofs; hollow markers
                         are the model's predicted rates.

Only the standard library and matplotlib (Agg backend, no display needed),
an optional dependency: `pip install clattn[plot]` or Debian's
python3-matplotlib. Without it the command says so and exits 1.
"""
import argparse
import json
import os
import sys

plt = None  # matplotlib.pyplot, imported by main()


def import_matplotlib():
    """matplotlib.pyplot on the Agg backend, or exits with what to install."""
    global plt
    try:
        import matplotlib
    except ImportError:
        sys.exit("clattn-plot-bench: matplotlib is not installed for %s: pip install "
                 "'clattn[plot]' (or matplotlib; Debian: apt install python3-matplotlib)"
                 % sys.executable)
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    plt = pyplot

PATH_COLOUR = {"naive": "tab:orange", "fused": "tab:blue"}
MASK_STYLE = {"none": ("o", "no mask"), "top-left": ("s", "causal"),
              "bottom-right": ("s", "causal")}
RAN = ("ok", "fail")


def load(path):
    with open(path) as f:
        data = json.load(f)
    if "rows" not in data or "device" not in data:
        sys.exit("%s: not a clattn bench JSON file" % path)
    return data


def shape_label(row):
    return "B=%d H=%d d=%d %s" % (row["batch"], row["heads"], row["head_dim"], row["dtype"])


def series(rows, path, causal):
    out = [r for r in rows if r["path"] == path and r["causal"] == causal]
    return sorted(out, key=lambda r: r["n"])


def plot_time_panel(ax, rows, title):
    """Measured points and predicted lines for every (path, mask) in rows."""
    any_oom = False
    marked = set()
    for path in ("naive", "fused"):
        for causal in ("none", "top-left", "bottom-right"):
            s = series(rows, path, causal)
            if not s:
                continue
            marker, mask = MASK_STYLE[causal]
            colour = PATH_COLOUR[path]
            label = "%s, %s" % (path, mask)
            ran = [r for r in s if r["status"] in RAN]
            if ran:
                xs = [r["n"] for r in ran]
                ys = [r["time_median_s"] * 1e3 for r in ran]
                lo = [y - r["time_min_s"] * 1e3 for y, r in zip(ys, ran)]
                hi = [r["time_max_s"] * 1e3 - y for y, r in zip(ys, ran)]
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt=marker, color=colour, capsize=3,
                            label=label + " (measured)")
            pred = [r for r in s if r["predicted_s"]]
            if pred:
                # Wide and pale for naive, so a fused line on top of it (both
                # compute bound: the same FLOPs) leaves it visible.
                ax.plot([r["n"] for r in pred], [r["predicted_s"] * 1e3 for r in pred],
                        linestyle="--" if causal == "none" else ":", color=colour,
                        linewidth=4 if path == "naive" else 1.5,
                        alpha=0.45 if path == "naive" else 1.0, label=label + " (model)")
            for r in s:
                if r["predicted_oom"] and r["status"] not in RAN and r["predicted_s"]:
                    any_oom = True
                    y = r["predicted_s"] * 1e3
                    ax.plot([r["n"]], [y], marker="x", color="red", markersize=11,
                            markeredgewidth=2, linestyle="none")
                    if (r["n"], y) not in marked:
                        marked.add((r["n"], y))
                        ax.annotate("OOM", (r["n"], y), textcoords="offset points",
                                    xytext=(7, -3), color="red", fontsize=8)
    if any_oom:
        ax.plot([], [], marker="x", color="red", linestyle="none",
                label="predicted out of memory (not run)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (Nq = Nk)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot_time(data, out):
    rows = data["rows"]
    measured = [r for r in rows if r["status"] != "model-only"]
    model_only = [r for r in rows if r["status"] == "model-only"]
    panels = [(p, [r for r in measured if r["path"] == p]) for p in ("naive", "fused")]
    panels = [(p, rs) for p, rs in panels if rs]
    n = len(panels) + (1 if model_only else 0)
    if n == 0:
        return False
    fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 4.5), squeeze=False)
    for ax, (path, rs) in zip(axes[0], panels):
        plot_time_panel(ax, rs, "%s path, %s" % (path, shape_label(rs[0])))
    if model_only:
        plot_time_panel(axes[0][-1], model_only,
                        "model only, not run: %s" % shape_label(model_only[0]))
    axes[0][0].set_ylabel("time per call (ms)")
    fig.suptitle("clattn bench on %s" % data["device"]["name"], fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def plot_roofline(data, out):
    rows = [r for r in data["rows"] if r["status"] in RAN and r["intensity"]]
    if not rows:
        return False
    ceil = data["ceilings"]
    bw = ceil["bandwidth"]["value"]
    peak = ceil["peak_flops_used"]["value"]
    fig, ax = plt.subplots(figsize=(10, 5.5))
    xs = [r["intensity"] for r in rows]
    lo, hi = min(xs) / 4, max(xs) * 4
    if bw and peak:
        ridge = peak / bw
        lo, hi = min(lo, ridge / 4), max(hi, ridge * 4)
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], color="black",
                label="roof: %.3g GB/s (%s), %.3g TFLOP/s (%s)" % (
                    bw * 1e-9, ceil["bandwidth"]["source"], peak * 1e-12,
                    ceil["peak_flops_used"]["source"]))
        ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
        ax.annotate("ridge %.3g FLOP/B" % ridge, (ridge, peak), textcoords="offset points",
                    xytext=(4, -12), fontsize=8, color="grey")
    for r in rows:
        marker, mask = MASK_STYLE[r["causal"]]
        colour = PATH_COLOUR[r["path"]]
        rate = r["model_flops"] / r["time_median_s"]
        ax.plot([r["intensity"]], [rate], marker=marker, color=colour, linestyle="none",
                label="%s, %s (measured)" % (r["path"], mask))
        ax.annotate(str(r["n"]), (r["intensity"], rate), textcoords="offset points",
                    xytext=(5, -3), fontsize=7)
        if r["predicted_s"]:
            ax.plot([r["intensity"]], [r["model_flops"] / r["predicted_s"]], marker=marker,
                    markerfacecolor="none", color=colour, linestyle="none",
                    label="%s, %s (model)" % (r["path"], mask))
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    ax.legend(seen.values(), seen.keys(), fontsize=7, loc="upper left",
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (model FLOPs / model bytes, FLOP/byte)")
    ax.set_ylabel("FLOP/s (model FLOPs / median time)")
    ax.set_title("roofline on %s\n%s, points labelled with N" % (
        data["device"]["name"], shape_label(rows[0])), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="file written by clattn bench --json")
    ap.add_argument("--out-dir", default=".", help="where the PNGs go (created)")
    ap.add_argument("--prefix", default="bench", help="file name prefix (default bench)")
    args = ap.parse_args()
    data = load(args.json)
    import_matplotlib()
    os.makedirs(args.out_dir, exist_ok=True)
    for name, fn in (("time", plot_time), ("roofline", plot_roofline)):
        out = os.path.join(args.out_dir, "%s_%s.png" % (args.prefix, name))
        if fn(data, out):
            print(out)
        else:
            print("%s: nothing to plot" % out, file=sys.stderr)


if __name__ == "__main__":
    main()
