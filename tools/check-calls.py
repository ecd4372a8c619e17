#!/usr/bin/env python3
"""Fail when the daemon's modules call each other in a circle.

tools/check-includes.py reads the #include lines; two modules can still
call each other through a header they both include. This reads the objects
instead: `nm` lists what each object defines and what it leaves undefined,
and an edge a -> b means a.c uses a symbol (a function or a variable) that
b.c defines. A module is a .c file's stem (config.c.o in libhf_core.a is
"config"). Every strongly connected component of more than one module is a
cycle: it is printed with the symbols that make each of its edges, and the
exit status is 1.

Usage: tools/check-calls.py [--nm NM] ARCHIVE_OR_OBJECT...
  e.g. tools/check-calls.py build/daemon/libhf_core.a build/daemon/libhf_wire.a
"""
import argparse
import os
import re
import subprocess
import sys

# `nm -A -P`: "lib.a[member.o]: name type value size" or "file.o: name type ...".
LINE = re.compile(r"^(?P<file>[^\[:]+)(?:\[(?P<member>[^\]]+)\])?:\s+(?P<name>\S+)\s+(?P<type>\S)")
DEFINED = set("TDBRVWGSC")  # global text, data, bss, read-only, weak, small, common


def module_of(path):
    """config.c.o (CMake) or config.o -> config."""
    base = os.path.basename(path)
    for suffix in (".c.o", ".o", ".obj"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def read_symbols(nm, files):
    """{module: defined names}, {module: undefined names}."""
    out = subprocess.run([nm, "-A", "-P"] + files, check=True, capture_output=True, text=True)
    defined, undefined = {}, {}
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        module = module_of(m.group("member") or m.group("file"))
        defined.setdefault(module, set())
        undefined.setdefault(module, set())
        kind = m.group("type")
        if kind == "U":
            undefined[module].add(m.group("name"))
        elif kind in DEFINED:
            defined[module].add(m.group("name"))
    return defined, undefined


def call_graph(defined, undefined):
    """{module: {module it uses: {symbols}}}."""
    owner = {}
    for module in sorted(defined):
        for name in defined[module]:
            owner.setdefault(name, module)
    graph = {module: {} for module in defined}
    for module, names in undefined.items():
        for name in names:
            target = owner.get(name)
            if target and target != module:
                graph[module].setdefault(target, set()).add(name)
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
    return sorted(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nm", default=os.environ.get("NM", "nm"), help="the nm to run")
    parser.add_argument("files", nargs="+", help="static libraries or object files")
    args = parser.parse_args()
    defined, undefined = read_symbols(args.nm, args.files)
    graph = call_graph(defined, undefined)
    found = cycles(graph)
    for scc in found:
        print("call cycle between modules: " + " <-> ".join(scc))
        for m in scc:
            for target in sorted(set(graph[m]) & set(scc)):
                print("  %s -> %s: %s" % (m, target, ", ".join(sorted(graph[m][target]))))
    if not found:
        edges = sum(len(t) for t in graph.values())
        print("no call cycles among %d modules (%d edges)" % (len(graph), edges))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
