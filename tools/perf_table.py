#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Markdown table of clattn bench rows beside PyTorch's torch_sdpa.py rows
(same GPU, same device call): times in ms and ratios.
usage: perf_table.py BENCH.json TORCH.jsonl [TORCH.jsonl ...]"""
import json
import sys


def main():
    bench = json.load(open(sys.argv[1]))
    torch = {}
    for path in sys.argv[2:]:
        for line in open(path):
            line = line.strip()
            if line.startswith('{') and '"N"' in line:
                r = json.loads(line)
                torch[(r['d'], r['N'], r['causal'])] = r
    ours = {}
    for r in bench['rows']:
        ours[(r['head_dim'], r['n'], r['causal'] != 'none', r['path'])] = r

    def ms(r):
        if r and r.get('time_median_s'):
            return r['time_median_s'] * 1e3
        return 'OOM' if r and r.get('predicted_oom') else None

    def tms(t, k):
        v = t.get(k) if t else None
        if isinstance(v, dict):
            return v['ms']
        return 'OOM' if isinstance(v, str) and 'memory' in v else None

    def fmt(x):
        if isinstance(x, str):
            return x
        return '%.3g' % x if x is not None else 'not run'

    def ratio(a, b):
        ok = isinstance(a, float) and isinstance(b, float)
        return '%.2f' % (a / b) if ok else '—'

    print('| d | N | causal | clattn naive ms | clattn fused ms | torch naive ms | SDPA flash ms '
          '| SDPA cuDNN ms | flash / fused | cuDNN / fused | torch naive / clattn naive '
          '| fused TFLOP/s (useful) | fused meas/pred |')
    print('|' + '---|' * 13)
    keys = sorted({(k[0], k[1], k[2]) for k in ours})
    for d, n, causal in keys:
        nv, fu = ours.get((d, n, causal, 'naive')), ours.get((d, n, causal, 'fused'))
        t = torch.get((d, n, causal))
        a, b = ms(nv), ms(fu)
        tn, tf, tc = tms(t, 'naive'), tms(t, 'flash'), tms(t, 'cudnn')
        print('| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            d, n, 'yes' if causal else 'no', fmt(a), fmt(b), fmt(tn), fmt(tf), fmt(tc),
            ratio(tf, b), ratio(tc, b), ratio(tn, a),
            '%.0f' % fu['tflops_useful'] if fu and fu.get('tflops_useful') else '—',
            '%.2f' % fu['ratio'] if fu and fu.get('ratio') else '—'))
    print()
    print('Fused causal speedup (no-mask time / causal time) against the ideal '
          'total / visited tiles:')
    print()
    print('| d | N | measured | ideal (tiles) | measured / ideal |')
    print('|---|---|---|---|---|')
    for d, n, causal in keys:
        if not causal:
            continue
        fu = ours.get((d, n, True, 'fused'))
        if fu and fu.get('speedup_measured') and fu.get('speedup_ideal'):
            print('| %d | %d | %.2f | %.2f | %.0f%% |' % (
                d, n, fu['speedup_measured'], fu['speedup_ideal'],
                100 * fu['speedup_measured'] / fu['speedup_ideal']))


if __name__ == '__main__':
    main()
