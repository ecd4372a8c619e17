#!/usr/bin/env python3
"""Fail when daemon/src has an include cycle between modules.

A module is a .c file and its .h (conn.c + conn.h = conn); a header without
a .c (op.h, daemon.h) is a module of its own. An edge a -> b means some file
of a includes b.h. Usage: tools/check-includes.py [DIR] (default daemon/src).
Prints the module graph's cycles, if any, and exits 1 for them.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_graph(src):
    graph = {}
    for name in sorted(os.listdir(src)):
        base, ext = os.path.splitext(name)
        if ext not in (".c", ".h"):
            continue
        with open(os.path.join(src, name), encoding="utf-8") as f:
            text = f.read()
        edges = graph.setdefault(base, set())
        for inc in INCLUDE.findall(text):
            target = os.path.splitext(os.path.basename(inc))[0]
            if target != base and os.path.exists(os.path.join(src, inc)):
                edges.add(target)
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "daemon", "src")
    graph = module_graph(src)
    found = cycles(graph)
    for scc in found:
        print("include cycle between modules: " + " <-> ".join(scc))
        for m in scc:
            inside = sorted(graph[m] & set(scc))
            print("  %s includes %s" % (m, ", ".join(inside)))
    if not found:
        print("no include cycles among %d modules in %s" % (len(graph), os.path.normpath(src)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
