#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's dependency graph, and the cycles in it.

usage: depgraph.py SRC_DIR BUILD_DIR [--dot FILE]

Two graphs over the files of SRC_DIR:
  - includes: a file -> each "quoted" header it includes (under SRC_DIR);
  - calls: a .c file -> the .c file defining a function or variable it uses,
    read from the symbol tables of the library's objects in BUILD_DIR (nm).
Prints the folder-level graph, then every cycle (a strongly connected set of
more than one file) of either graph; exits 1 if there is one. Folders that
use each other only through the context's embedded module state are listed,
not counted as cycles.
"""
import os
import re
import subprocess
import sys
from collections import defaultdict


def include_graph(src):
    graph = defaultdict(set)
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            for line in open(path, encoding='utf-8'):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m and os.path.exists(os.path.join(src, m.group(1))):
                    graph[rel].add(m.group(1))
            graph.setdefault(rel, set())
    return graph


def object_files(build):
    for root, _, files in os.walk(build):
        for name in files:
            if name.endswith('.c.o') and 'libclattn' in root:
                yield os.path.join(root, name)


def source_of(obj):
    # meson names objects after the source path with '/' as '_':
    # src/libclattn.so.0.1.0.p/fused_portable.c.o -> fused/portable.c
    base = os.path.basename(obj)[:-2]
    folder, _, rest = base.partition('_')
    return f'{folder}/{rest}'


def call_graph(build, src):
    defined, used = {}, defaultdict(set)
    for obj in object_files(build):
        rel = source_of(obj)
        if not os.path.exists(os.path.join(src, rel)):
            continue
        out = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in 'TDRB':
                defined[parts[2]] = rel
            elif len(parts) == 2 and parts[0] == 'U':
                used[rel].add(parts[1])
    graph = defaultdict(set)
    for rel, syms in used.items():
        for sym in syms:
            target = defined.get(sym)
            if target and target != rel:
                graph[rel].add(target)
        graph.setdefault(rel, set())
    return graph


def cycles(graph):
    """Tarjan's strongly connected components of more than one node."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def folder_edges(*graphs):
    edges = defaultdict(set)
    for g in graphs:
        for a, bs in g.items():
            for b in bs:
                fa, fb = a.split('/')[0], b.split('/')[0]
                if fa != fb:
                    edges[fa].add(fb)
    return edges


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    inc, calls = include_graph(src), call_graph(build, src)
    edges = folder_edges(inc, calls)
    print('folder -> folders it uses (includes or calls):')
    for f in sorted(set(edges) | {x for v in edges.values() for x in v}):
        print(f'  {f:10s} -> {", ".join(sorted(edges.get(f, ()))) or "-"}')
    if '--dot' in sys.argv:
        with open(sys.argv[sys.argv.index('--dot') + 1], 'w') as f:
            f.write('digraph clattn {\n  rankdir=BT;\n')
            for a, bs in sorted(edges.items()):
                for b in sorted(bs):
                    f.write(f'  "{a}" -> "{b}";\n')
            f.write('}\n')
    bad = 0
    for name, g in (('include', inc), ('call', calls)):
        for comp in cycles(g):
            print(f'{name} cycle: ' + ' <-> '.join(comp))
            bad = 1
    # Folders may use each other through the context, which embeds each
    # module's state: shown, not failed.
    for comp in cycles(edges):
        print('folders through the context: ' + ' <-> '.join(comp))
    print(f'{len(inc)} files, {sum(map(len, inc.values()))} includes, '
          f'{sum(map(len, calls.values()))} call edges between files; '
          f'{"cycles found" if bad else "no include or call cycle"}')
    return bad


if __name__ == '__main__':
    sys.exit(main())
