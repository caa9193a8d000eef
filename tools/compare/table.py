#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The raw records of the tools/compare/ scripts, and the markdown tables
docs/PERFORMANCE.md shows, made from them.

Each script appends one JSON record per command it ran to a .jsonl file
(`record`), then prints its table from that file. A record keeps the
command's exit status and its whole machine-readable output, so a table can
be made again from the file alone.

usage:
  table.py record SOURCE LABEL RC ARGS [FILE]   one record on stdout
      SOURCE: time_fused (FILE: its JSON line), bench or predict (FILE: the
      --json file), devices (FILE: devices --json or --measure --json),
      torch (FILE: torch_attention.py's JSON lines), text (FILE: the tail
      is kept), power (FILE: nvidia-smi's csv lines), phase (ARGS: start
      and end, `date +%s.%N`)
  table.py ceilings|prefill|sustained|decode|kvcache|fp32|naive|oom RAW.jsonl [--read-bw B/s]
"""
import json
import statistics
import sys


def load_json_lines(text):
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def record(argv):
    source, label, rc, args = argv[:4]
    text = ""
    if len(argv) > 4:
        try:
            with open(argv[4], errors="replace") as f:
                text = f.read()
        except OSError as ex:  # the command wrote nothing: its status says why
            text = "(no output: %s)" % ex
    rec = {"source": source, "label": label, "rc": int(rc), "args": args}
    if source == "time_fused":
        rows = load_json_lines(text)
        rec["result"] = rows[0] if rows else None
        if not rows:
            rec["error"] = text[-600:]
    elif source in ("bench", "predict", "devices"):
        try:
            rec["result"] = json.loads(text)
        except ValueError:
            rec["result"] = None
            rec["error"] = text[-600:]
    elif source == "torch":
        rec["rows"] = load_json_lines(text)
        rec["tail"] = "\n".join(l for l in text.splitlines() if not l.startswith("{"))[-600:]
    elif source == "power":
        rec["samples"] = [l.split(", ") for l in text.splitlines() if l.count(",") >= 2]
    else:
        rec["tail"] = text[-1500:]
    print(json.dumps(rec))


def read_raw(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def med(xs):
    return statistics.median(xs)


def f3(x):
    """Three significant figures, the way the tables print times."""
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    return "%.3g" % x if x < 1000 else "%.0f" % x


def f4(x):
    return "—" if x is None else ("%.4g" % x if isinstance(x, float) else str(x))


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def fr(x):
    return "—" if x is None else "%.2f" % x


def span(xs, fmt=fr):
    """'a' or 'lo–hi' of the numbers among xs."""
    xs = sorted(x for x in xs if isinstance(x, (int, float)))
    if not xs:
        return "—"
    lo, hi = fmt(xs[0]), fmt(xs[-1])
    return lo if lo == hi else "%s–%s" % (lo, hi)


def torch_ms(row, name):
    """A PyTorch row's time for one backend: ms, 'OOM', or None."""
    v = row.get(name) if row else None
    if isinstance(v, dict):
        return v.get("ms")
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and "memory" in v:
        return "OOM"
    return None


def tf_shape(args):
    """time_fused's arguments: shape tuple, dtype, mask."""
    a = args.split()
    return tuple(int(x) for x in a[0].split(",")), a[1], a[2]


def tf_ms(rec):
    r = rec.get("result")
    if rec.get("rc") or not r:
        return None
    return med(r["times"]) * 1e3


def bench_rows(recs, label=None):
    for rec in recs:
        if rec["source"] == "bench" and (label is None or rec["label"] == label) and rec.get("result"):
            for row in rec["result"].get("rows", []):
                yield rec, row


def check_cell(row):
    if not row:
        return "not checked"
    if row.get("status") != "ok":
        return row.get("status", "?") + (": " + row["detail"][:60] if row.get("detail") else "")
    return "ok (rel_l2 %.1e)" % row["rel_l2"]


def check_summary(recs, label):
    """One line: how many clattn rows the bench checked, the worst error,
    and every bench command's exit status."""
    rows = [row for _, row in bench_rows(recs, label) if row.get("status") not in ("model-only",)]
    ok = [r for r in rows if r.get("check_ok")]
    rcs = sorted({rec["rc"] for rec in recs if rec["source"] == "bench" and rec["label"] == label})
    worst = max((r["rel_l2"] for r in ok), default=None)
    return ("clattn rows checked against the CPU reference by `clattn bench` (exit %s): %d of %d "
            "ok%s." % ("/".join(map(str, rcs)) or "—", len(ok), len(rows),
                       ", worst rel_l2 %.1e" % worst if worst is not None else ""))


def verify_lines(recs):
    for rec in recs:
        if rec["source"] == "text" and rec["label"].startswith("verify"):
            last = [l for l in rec.get("tail", "").splitlines() if l.strip()]
            print("`%s`: exit %d%s" % (rec["args"].strip(), rec["rc"], ", " + last[-1] if last else ""))


# --- the device's ceilings ---------------------------------------------------

def si(x, unit, scale=1.0):
    if x is None:
        return "—"
    x = x / scale
    for p, s in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= p:
            return "%.3g %s%s" % (x / p, s, unit)
    return "%.3g %s" % (x, unit)


def gib(x):
    return "—" if x is None else "%.2f GiB" % (x / 2**30)


def mib(x):
    return "—" if x is None else "%.2f MiB" % (x / 2**20)


def ceilings(recs, _opts):
    dev = meas = None
    for rec in recs:
        if rec["source"] == "devices" and rec.get("result"):
            if rec["label"] == "devices":
                dev = rec["result"]["devices"][0] if rec["result"].get("devices") else None
            else:
                meas = rec["result"]
    if not dev or not meas:
        print("no devices / devices --measure output in the raw file")
        return

    def val(d, k):
        v = d.get(k)
        return v.get("value") if isinstance(v, dict) else v

    def m(k):
        v = meas.get(k)
        return v.get("median") if isinstance(v, dict) else None

    print("%s, %s, `clattn devices --measure` (%.1f s):\n" % (meas["device"], meas["driver_version"],
                                                            meas.get("seconds", 0)))
    print("| figure | value | source |")
    print("| --- | --- | --- |")
    print("| global memory | %s | reported |" % gib(val(dev, "global_mem_bytes")))
    print("| largest allocation | %s | reported |" % gib(val(dev, "max_alloc_bytes")))
    gc = val(dev, "global_cache_bytes")
    print("| `CL_DEVICE_GLOBAL_MEM_CACHE_SIZE` | %s%s | reported |" % (
        mib(gc), " (the SMs' L1 together, not the L2)" if dev.get("global_cache_is_l1") else ""))
    print("| last-level cache (working-set sweep) | %s | measured |" % mib(meas.get("cache_bytes")))
    print("| read bandwidth past the cache (sweep floor) | %s | measured |" % si(meas.get("sweep_floor"), "B/s"))
    print("| copy bandwidth (1 GiB, read + write) | %s | measured |" % si(m("bandwidth"), "B/s"))
    print("| fp32 FMA | %s | measured |" % si(m("flops_f32"), "FLOP/s"))
    if m("flops_f16"):
        print("| fp16 FMA (half2) | %s | measured |" % si(m("flops_f16"), "FLOP/s"))
    if m("flops_tensor_f16"):
        print("| fp16 `mma.sync` m16n8k16, fp32 accumulate | %s | measured |" % si(m("flops_tensor_f16"), "FLOP/s"))
    if m("flops_wgmma_f16"):
        print("| fp16 `wgmma.mma_async` m64n128k16 (PTX binary) | %s | measured |" % si(m("flops_wgmma_f16"), "FLOP/s"))
    if m("launch_latency_s"):
        print("| kernel launch, queued | %.1f µs | measured |" % (m("launch_latency_s") * 1e6))
    if m("launch_roundtrip_s"):
        print("| kernel launch + `clFinish` | %.1f µs | measured |" % (m("launch_roundtrip_s") * 1e6))


# --- prefill -------------------------------------------------------------------

def prefill(recs, _opts):
    t = {}     # (d, N, mask) -> (ms, kernel)
    bh = (0, 0)
    for rec in recs:
        if rec["source"] == "time_fused" and rec["label"] == "prefill":
            shape, _, mask = tf_shape(rec["args"])
            r = rec.get("result") or {}
            t[(shape[5], shape[4], mask)] = (tf_ms(rec), r.get("kernel", "failed (rc %d)" % rec["rc"]))
            bh = shape[:2]
    torch = {}
    for rec in recs:
        if rec["source"] == "torch" and rec["label"] == "prefill":
            for row in rec["rows"]:
                if "N" in row:
                    torch[(row["d"], row["N"], "top-left" if row["causal"] else "none")] = row
    checks = {}
    for _, row in bench_rows(recs, "prefill-check"):
        checks[(row["head_dim"], row["kv_len"], row["causal"])] = row
    flex = any(torch_ms(r, "flex") is not None for r in torch.values())
    head = ["d", "N", "kernel", "clattn ms", "flash ms", "cuDNN ms", "flash / clattn", "cuDNN / clattn"]
    if flex:
        head += ["FlexAttention ms", "flex / clattn"]
    head += ["clattn TFLOP/s", "causal speedup (tile ideal)"]
    print("fp16, B = %d, H = %d, Nq = Nk = N; each cell no mask / causal (top-left)%s.\n" % (
        bh + ("" if torch else "; PyTorch not run",)))
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    keys = sorted({(d, n) for d, n, _ in t}, key=lambda k: (k[0] != 128, k[0], k[1]))
    for d, n in keys:
        a, b = t.get((d, n, "none"), (None, "?")), t.get((d, n, "top-left"), (None, "?"))
        ta, tb = torch.get((d, n, "none")), torch.get((d, n, "top-left"))

        def pair(f):
            return "%s / %s" % (f(ta, a), f(tb, b))
        cells = [str(d), str(n), a[1].replace("fused/", ""),
                 "%s / %s" % (f4(a[0]), f4(b[0])),
                 pair(lambda tr, _c: f4(torch_ms(tr, "flash"))),
                 pair(lambda tr, _c: f4(torch_ms(tr, "cudnn"))),
                 pair(lambda tr, c: fr(ratio(torch_ms(tr, "flash"), c[0]))),
                 pair(lambda tr, c: fr(ratio(torch_ms(tr, "cudnn"), c[0])))]
        if flex:
            cells += [pair(lambda tr, _c: f4(torch_ms(tr, "flex"))),
                      pair(lambda tr, c: fr(ratio(torch_ms(tr, "flex"), c[0])))]
        flops = 4.0 * bh[0] * bh[1] * n * n * d
        cells.append("%.3g" % (flops / a[0] / 1e9) if a[0] else "—")
        ck = checks.get((d, n, "top-left"))
        ideal = ck.get("speedup_ideal") if ck else None
        sp = ratio(a[0], b[0])
        cells.append("%s (%s)" % (fr(sp), fr(ideal)))
        print("| " + " | ".join(cells) + " |")
    print()
    print(check_summary(recs, "prefill-check"))


def sustained(recs, _opts):
    phases = [r for r in recs if r["source"] == "phase"]
    power = [r for r in recs if r["source"] == "power"]
    samples = []
    for p in power:
        for s in p["samples"]:
            try:
                samples.append((float(s[0]), float(s[1]), float(s[2])))
            except (ValueError, IndexError):
                pass

    def watts(label):
        ph = next((p for p in phases if p["label"] == label), None)
        if not ph or not samples:
            return "—"
        t0, t1 = (float(x) for x in ph["args"].split())
        w = [s[1] for s in samples if t0 <= s[0] <= t1]
        mhz = [s[2] for s in samples if t0 <= s[0] <= t1]
        return "up to %.0f W; %.0f–%.0f MHz" % (max(w), min(mhz), max(mhz)) if w else "—"
    rows = []
    for rec in recs:
        if rec["source"] == "time_fused" and rec["label"] in ("burst", "sustained"):
            how = {"burst": "burst (3 × 10 calls)", "sustained": "sustained (10 × 40 calls)"}
            rows.append(("clattn " + ((rec.get("result") or {}).get("kernel", "?")).replace("fused/", ""),
                         how[rec["label"]], tf_ms(rec), watts("clattn " + rec["label"])))
        if rec["source"] == "torch" and rec["label"] == "sustained":
            for r in rec["rows"]:
                be = r["backend"]
                rows.append(("PyTorch " + be, "burst (20 calls)", r["burst_ms"], "—"))
                rows.append(("PyTorch " + be, "sustained (%d calls, %.1f s)" % (
                    r["sustained_calls"], r["sustained_s"]), r["sustained_ms"],
                    watts("torch %s" % be)))
    print("| who | timing | ms per call | board power, SM clock (nvidia-smi, every 100 ms) |")
    print("| --- | --- | --- | --- |")
    for who, how, ms, w in rows:
        print("| %s | %s | %s | %s |" % (who, how, f4(ms), w))


# --- decoding ------------------------------------------------------------------

def decode(recs, opts):
    order, t = [], {}
    for rec in recs:
        if rec["source"] == "time_fused" and rec["label"].startswith("decode"):
            shape, _, mask = tf_shape(rec["args"])
            key = (shape, mask)
            if key not in t:
                order.append(key)
                t[key] = []
            t[key].append(rec)
    torch = {}
    for rec in recs:
        if rec["source"] == "torch" and rec["label"].startswith("decode"):
            for row in rec["rows"]:
                if "case" in row:
                    torch.setdefault(tuple(int(x) for x in row["case"].split(",")[:6]), []).append(row)
    checks = {}
    for _, row in bench_rows(recs, "decode-check"):
        checks[(row["batch"], row["heads"], row["kv_heads"], row["q_len"], row["kv_len"],
                row["head_dim"])] = row
    read_bw = opts.get("read_bw")
    head = ["B, Nq, Nk", "kernel (splits)", "clattn ms", "device ms per call", "flash ms",
            "cuDNN ms", "flash / clattn", "cuDNN / clattn", "K/V streamed", "check"]
    h = order[0][0] if order else (0,) * 6
    print("fp16, H = %d, Hkv = %d, d = %d; clattn: each round's median, PyTorch: each run's "
          "(before and after clattn's rounds)%s.\n" % (h[1], h[2], h[5], "" if torch else
                                                      "; PyTorch not run"))
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for shape, mask in order:
        recs_ = t[(shape, mask)]
        B, H, Hkv, Nq, Nk, d = shape
        ms = [tf_ms(r) for r in recs_]
        res = [r.get("result") or {} for r in recs_]
        dev = [x["device_per_call_s"] * 1e3 for x in res if x.get("device_per_call_s")]
        kern = res[0].get("kernel", "failed").replace("fused/", "") if res else "?"
        splits = sorted({x.get("splits") for x in res if x.get("splits") is not None})
        tr = torch.get(shape, [])
        fl = [torch_ms(r, "flash") for r in tr]
        cu = [torch_ms(r, "cudnn") for r in tr]
        nums = [m for m in ms if m]
        fl_r = [ratio(a, b) for a in fl for b in nums]
        cu_r = [ratio(a, b) for a in cu for b in nums]
        label = "%d, %d, %d%s" % (B, Nq, Nk, "" if mask == "none" else " " + mask)
        if Nq == 1 and dev:
            kv = 2.0 * B * Hkv * Nk * d * 2
            bw = kv / (med(dev) * 1e-3)
            stream = si(bw, "B/s") + (" (%.0f%%)" % (100 * bw / read_bw) if read_bw else "")
        else:
            stream = "— (compute-bound)"
        masked = " (no mask)" if mask != "none" and tr and all(
            r["case"].split(",")[7] == "0" for r in tr) else ""
        print("| %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, kern, ",".join(map(str, splits)), ", ".join(f4(m) for m in ms),
            f4(med(dev)) if dev else "—",
            ", ".join(f4(x) for x in fl) + masked if fl else "not run",
            ", ".join(f4(x) for x in cu) + masked if cu else "not run",
            span(fl_r), span(cu_r), stream, check_cell(checks.get(shape))))
    print()
    print("K/V streamed: 2·B·Hkv·Nk·d·2 bytes over the device time per call%s." % (
        " (in brackets: of the %.2f TB/s read rate past the cache, `clattn devices --measure`)"
        % (read_bw / 1e12) if read_bw else ""))
    print(check_summary(recs, "decode-check"))


# --- kvcache ---------------------------------------------------------------------

FORM_BYTES = {"fp16": 2.0, "paged16": 2.0, "paged256": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32,
              "fp8_e4m3": 1.0}


def kvcache(recs, opts):
    t, order = {}, []
    for rec in recs:
        if rec["source"] == "time_fused" and rec["label"].startswith("kvcache/"):
            a = rec["args"].split()
            shape, form = tuple(int(x) for x in a[0].split(",")), a[3]
            if shape not in t:
                order.append(shape)
                t[shape] = {}
            t[shape][form] = rec
    torch = {}
    for rec in recs:
        if rec["source"] == "torch" and rec["label"] == "kvcache-torch":
            for row in rec["rows"]:
                if "form" in row:
                    key = tuple(int(x) for x in row["case"].split(",")[:6])
                    torch[(key, row["form"])] = row
    read_bw = opts.get("read_bw")
    head = ["B, Nk", "cache", "kernel (splits)", "clattn ms", "device ms", "fp16 / form",
            "streamed", "PyTorch step ms (flash, cuDNN)", "dequant ms", "PyTorch / clattn"]
    print("fp16 queries, H = 32, Hkv = 8, d = 128, Nq = 1; clattn: median of 3 batches of 20 "
          "calls; PyTorch: the gather or dequantization and SDPA, 20 calls.\n")
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for shape in order:
        B, H, Hkv, Nq, Nk, d = shape
        base = tf_ms(t[shape]["fp16"]) if "fp16" in t[shape] else None
        for form, rec in t[shape].items():
            r = rec.get("result") or {}
            ms = tf_ms(rec)
            dev = r.get("device_per_call_s")
            kv = 2.0 * B * Hkv * Nk * d * FORM_BYTES.get(form, 2.0)
            if dev:
                bw = kv / dev
                stream = si(bw, "B/s") + (" (%.0f%%)" % (100 * bw / read_bw) if read_bw else "")
            else:
                stream = "—"
            tr = torch.get((shape, form))
            fl, cu = torch_ms(tr, "flash"), torch_ms(tr, "cudnn")
            best = min((x for x in (fl, cu) if isinstance(x, (int, float))), default=None)
            deq = tr.get("dequant_ms") if tr else None
            print("| %d, %d | %s | %s (%s) | %s | %s | %s | %s | %s, %s | %s | %s |" % (
                B, Nk, form, r.get("kernel", "failed").replace("fused/", ""), r.get("splits", "—"),
                f4(ms) if ms else "failed", f4(dev * 1e3) if dev else "—",
                fr(ratio(base, ms)) if base and ms else "—", stream,
                f4(fl) if isinstance(fl, (int, float)) else (fl or "not run"),
                f4(cu) if isinstance(cu, (int, float)) else (cu or "not run"),
                f4(deq) if isinstance(deq, (int, float)) else "—",
                fr(ratio(best, ms)) if best and ms else "—"))
    print()
    print("streamed: the cache's bytes (2·B·Hkv·Nk·d values at 2, 34/32, 18/32 or 1 bytes each) "
          "over the device time per call%s." % (
              " (in brackets: of the %.2f TB/s read rate past the cache, `clattn devices --measure`)"
              % (read_bw / 1e12) if read_bw else ""))



# --- fp32 ------------------------------------------------------------------------

def fp32(recs, opts):
    fma = opts.get("fma")
    torch = {}
    for rec in recs:
        if rec["source"] == "torch" and rec["label"] == "fp32":
            for row in rec["rows"]:
                if "case" in row:
                    torch[tuple(int(x) for x in row["case"].split(",")[:6])] = row
    checks = {}
    for _, row in bench_rows(recs, "fp32-check"):
        checks[(row["head_dim"], row["kv_len"], row["dtype"])] = row
    head = ["d", "N", "dtype", "kernel", "clattn ms", "TFLOP/s", "of the FMA rate",
            "memory-efficient ms", "efficient / clattn", "check"]
    sh = next((tf_shape(r["args"])[0] for r in recs if r["source"] == "time_fused"), (0,) * 6)
    print("B = %d, H = %d, Nq = Nk = N, no mask%s.\n" % (sh[0], sh[1], "" if torch else
                                                         "; PyTorch not run"))
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for rec in recs:
        if rec["source"] != "time_fused" or rec["label"] != "fp32":
            continue
        shape, dtype, _ = tf_shape(rec["args"])
        B, H, _, N, _, d = shape
        ms = tf_ms(rec)
        fl = 4.0 * B * H * N * N * d / (ms * 1e-3) if ms else None
        ef = torch_ms(torch.get(shape), "efficient")
        print("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            d, N, dtype, (rec.get("result") or {}).get("kernel", "failed").replace("fused/", ""),
            f4(ms), "%.3g" % (fl / 1e12) if fl else "—",
            "%.0f%%" % (100 * fl / fma) if fl and fma else "—", f4(ef), fr(ratio(ef, ms)),
            check_cell(checks.get((d, N, dtype)))))
    print()
    print("TFLOP/s: 4·B·H·N²·d over the time%s." % (
        "; the FMA rate: %.3g TFLOP/s (`clattn devices --measure`)" % (fma / 1e12) if fma else ""))


# --- the naive path --------------------------------------------------------------

def naive(recs, _opts):
    torch = {}
    for rec in recs:
        if rec["source"] == "torch" and rec["label"] == "naive":
            for row in rec["rows"]:
                if "N" in row:
                    torch[(row["N"], "top-left" if row["causal"] else "none")] = row
    head = ["N", "mask", "kernel", "clattn ms", "PyTorch ms", "PyTorch / clattn", "clattn TFLOP/s",
            "clattn GB/s", "meas/pred", "check"]
    r0 = next((row for _, row in bench_rows(recs, "naive")), {})
    print("fp16, B = %s, H = %s, d = %s; clattn's naive path: S and P written to device memory%s.\n"
          % (r0.get("batch"), r0.get("heads"), r0.get("head_dim"), "" if torch else
             "; PyTorch not run"))
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for _, row in bench_rows(recs, "naive"):
        if row.get("path") != "naive":
            continue
        n, mask = row.get("kv_len", row["n"]), row["causal"]
        ms = row["time_median_s"] * 1e3 if row.get("time_median_s") else None
        pt = torch_ms(torch.get((n, mask)), "naive")
        print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, mask, row.get("kernel") or "—", f4(ms) if ms else row.get("status"), f4(pt),
            fr(ratio(pt, ms)),
            "%.3g" % row["tflops_useful"] if row.get("tflops_useful") else "—",
            "%.0f" % row["gbps"] if row.get("gbps") else "—",
            fr(row.get("ratio")), check_cell(row)))
    print()
    print("TFLOP/s: useful FLOPs (4·B·H·N²·d, half with the mask) over the median; GB/s and "
          "meas/pred: the byte model's traffic and roofline time (docs/MODEL.md).")


# --- the naive path's memory boundary -------------------------------------------

def oom(recs, _opts):
    pred = {}
    for rec in recs:
        if rec["source"] == "predict" and rec.get("result"):
            cap = rec["result"]["device"].get("capacity_bytes", {})
            for row in rec["result"]["rows"]:
                pred[row["kv_len"]] = (row["naive"], cap)
    r0 = next((row for _, row in bench_rows(recs, "oom")), {})
    print("fp16, B = %s, H = %s, d = %s, naive path, no mask; `clattn predict` on the device, "
          "then `clattn bench --confirm-oom` runs every row.\n" % (
              r0.get("batch"), r0.get("heads"), r0.get("head_dim")))
    print("| N | naive buffers (Q, K, V, O, S, P) | S | model (capacity %s, %s) | run |" % (
        gib(next(iter(pred.values()))[1].get("value")) if pred else "?",
        next(iter(pred.values()))[1].get("source", "?") if pred else "?"))
    print("| --- | --- | --- | --- | --- |")
    for _, row in bench_rows(recs, "oom"):
        n = row["kv_len"]
        p, _ = pred.get(n, ({}, {}))
        st = row.get("status")
        run = {"ok": "ran, check ok", "fail": "ran, check FAILED"}.get(st, st)
        if st == "oom-confirmed" or st == "error":
            run = "%s: %s" % (st, (row.get("detail") or "")[:120])
        print("| %d | %s | %s | %s | %s |" % (n, gib(p.get("peak_bytes")), gib(p.get("largest_bytes")),
                                              p.get("fit", "—"), run))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if sys.argv[1] == "record":
        return record(sys.argv[2:])
    opts = {}
    if "--read-bw" in sys.argv:
        opts["read_bw"] = float(sys.argv[sys.argv.index("--read-bw") + 1])
    if "--fma" in sys.argv:
        opts["fma"] = float(sys.argv[sys.argv.index("--fma") + 1])
    recs = read_raw(sys.argv[2])
    fn = {"ceilings": ceilings, "prefill": prefill, "sustained": sustained, "decode": decode,
          "fp32": fp32, "naive": naive, "oom": oom, "kvcache": kvcache}.get(sys.argv[1])
    if not fn:
        sys.exit(__doc__)
    fn(recs, opts)
    verify_lines(recs)


if __name__ == "__main__":
    main()
