#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# Which file of a source directory calls a function defined in which other
# file of it, as the compiler sees the calls.
#
#   contrib/call-pairs.py [-b BUILD_DIR] [-v] [--check] [--allow A,B]...
#                         [--allow-file FILE] SRC_DIR
#
#   SRC_DIR     directory of the sources, e.g. src/uct/dcx
#   -b DIR      configured build tree whose flags the files are compiled
#               with (default: build/ in the repository)
#   -v          list every call behind each pair (caller -> callee)
#   --check     exit status 1 when two files call each other (other than
#               the pairs the exceptions allow) or a cycle of calls goes
#               through more than two files; ends with one line saying so
#   --allow A,B two files that may call each other (an object and its
#               owner, e.g. dcx_iface.c,dcx_ep.c); repeatable
#   --allow-file FILE
#               the exceptions (default: contrib/call-pairs.allow; "" for
#               none).  One a line, FOLDER named from the top of the source
#               tree, each with its reason:
#                 FOLDER A.c B.c REASON   A and B may call each other
#                 FOLDER report REASON    FOLDER is reported, not checked:
#                                         --check prints it all and passes
#               '#' starts a comment line.  A line naming a folder or a
#               file that is not there, or without a reason, is an error
#               (status 2); an allowed pair that does not call both ways is
#               noted (it may in another build: dcx_compat.c compiles other
#               functions against newer UCX).
#
# Each .c file of SRC_DIR is compiled once more, at -O0 so that nothing is
# inlined away, with gcc -fcallgraph-info, using the preprocessor and
# compiler flags of the automake target of the build tree that lists the
# file among its sources (asked from make itself).  The call graph gcc
# writes for each translation unit gives every function defined there with
# the file and line of its definition (a static inline function of a header
# belongs to that header) and every direct call it makes; a call to a
# function the unit only declares is resolved by name against the
# definitions of the other units.  Calls through function pointers (ops
# tables, callbacks) are not calls here: the compiler cannot say where they
# land.  Calls leaving SRC_DIR are left out.
#
# Prints the ordered file pairs (caller file -> callee file) with the number
# of distinct caller/callee function pairs behind each, marks pairs that go
# both ways ("<->") and, for those allowed, the reason, and lists the
# groups of files that reach each other through longer chains: for every
# file of such a group, one shortest cycle through it longer than two
# files, and the number of such simple cycles.

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict, deque

CYCLE_COUNT_CAP = 100000


def fail(msg):
    sys.stderr.write("call-pairs: %s\n" % msg)
    sys.exit(2)


def read_allow_file(path, folder, top_src):
    """The exceptions of FOLDER in the allow file: (pairs, each a frozenset
    of two file names -> reason; the reason FOLDER is reported only, or
    None)."""
    pairs, report = {}, None
    if not path:
        return pairs, report
    try:
        f = open(path)
    except OSError as e:
        fail("cannot read the exceptions: %s" % e)
    with f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if (not words) or words[0].startswith("#"):
                continue
            where = "%s:%d" % (path, n)
            if not os.path.isdir(os.path.join(top_src, words[0])):
                fail("%s: no folder %s" % (where, words[0]))
            if os.path.normpath(words[0]) != folder:
                continue
            if (len(words) >= 3) and (words[1] == "report"):
                report = " ".join(words[2:])
                continue
            if len(words) < 4:
                fail("%s: wants FOLDER A.c B.c REASON or FOLDER report "
                     "REASON" % where)
            for name in words[1:3]:
                if not os.path.isfile(os.path.join(top_src, folder, name)):
                    fail("%s: %s has no file %s" % (where, folder, name))
            pairs[frozenset(words[1:3])] = " ".join(words[3:])
    return pairs, report


def make_query(build, lines):
    """Runs make in the build tree with an extra makefile whose one rule
    echoes the given make expressions, one per output line."""
    rule = "__call_pairs_query:\n"
    for expr in lines:
        rule += "\t@echo '%s'\n" % expr.replace("'", "'\\''")
    with tempfile.NamedTemporaryFile("w", suffix=".mk", delete=False) as mk:
        mk.write(rule)
        name = mk.name
    try:
        out = subprocess.run(["make", "-s", "--no-print-directory", "-C",
                              build, "-f", "Makefile", "-f", name,
                              "__call_pairs_query"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
    finally:
        os.unlink(name)
    if out.returncode != 0:
        fail("make in %s failed:\n%s" % (build, out.stderr))
    return out.stdout.split("\n")[:len(lines)]


def target_flags(build, rel_sources):
    """The compiler and flags of the automake target that builds most of
    rel_sources (paths relative to the top source directory)."""
    with open(os.path.join(build, "Makefile")) as f:
        targets = sorted(set(re.findall(r"^(\w+)_SOURCES\s*=", f.read(),
                                        re.M)))
    targets = [t for t in targets if t != "DIST"]   # automake's, all files
    values  = make_query(build, ["$(%s_SOURCES)" % t for t in targets])
    wanted  = set(rel_sources)
    best, best_key = None, (0, 0)
    for t, v in zip(targets, values):
        # most of the directory's files, then fewest others
        key = (len(wanted & set(v.split())), -len(v.split()))
        if (key[0] > 0) and (key > best_key):
            best, best_key = t, key
    if best is None:
        fail("no target of %s builds the files of the directory" % build)
    cpp = "$(if $(value %s_CPPFLAGS),$(%s_CPPFLAGS),$(AM_CPPFLAGS))" % \
          (best, best)
    cfl = "$(if $(value %s_CFLAGS),$(%s_CFLAGS),$(AM_CFLAGS))" % (best, best)
    cc, flags = make_query(build, [
        "$(CC)",
        "$(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) %s $(CPPFLAGS) %s $(CFLAGS)"
        % (cpp, cfl)])
    return cc.split(), flags.split(), best


def parse_ci(path):
    """Nodes (title -> (name, file, defined_here)) and edges (source title,
    target title) of one -fcallgraph-info file."""
    nodes, edges = {}, []
    node_re = re.compile(r'^node: \{ title: "([^"]*)" label: "([^"]*)"'
                         r'( shape : ellipse)?')
    edge_re = re.compile(r'^edge: \{ sourcename: "([^"]*)" '
                         r'targetname: "([^"]*)"')
    with open(path) as f:
        for line in f:
            m = node_re.match(line)
            if m:
                parts = m.group(2).split("\\n")
                loc   = parts[1].rsplit(":", 2)[0] if len(parts) > 1 else ""
                nodes[m.group(1)] = (parts[0], loc, m.group(3) is None)
                continue
            m = edge_re.match(line)
            if m:
                edges.append((m.group(1), m.group(2)))
    return nodes, edges


def simple_cycles_over_two(graph, nodes, cap):
    """Number of simple cycles of more than two nodes (at most cap)."""
    order = sorted(nodes)
    index = {n: i for i, n in enumerate(order)}
    count = 0

    # each cycle counted once, from its smallest node
    for start in order:
        stack = [(start, iter(sorted(graph[start])), 1)]
        on_path = {start}
        while stack:
            node, it, depth = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_path.discard(node)
                continue
            if nxt == start:
                if depth > 2:
                    count += 1
                    if count >= cap:
                        return count
                continue
            if (nxt in on_path) or (index[nxt] < index[start]) or \
               (nxt not in nodes):
                continue
            on_path.add(nxt)
            stack.append((nxt, iter(sorted(graph[nxt])), depth + 1))
    return count


def shortest_long_cycle(graph, s):
    """A shortest simple cycle through s of more than two nodes, or None."""
    best = None
    for v in sorted(graph[s]):
        if v == s:
            continue
        for w in sorted(graph[v]):
            if w in (s, v):
                continue
            # shortest path w -> s avoiding v (and s before the end)
            prev = {w: None}
            queue = deque([w])
            while queue:
                x = queue.popleft()
                if s in graph[x]:
                    path = [x]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    cycle = [s, v] + path[::-1]
                    if (best is None) or (len(cycle) < len(best)):
                        best = cycle
                    break
                for y in sorted(graph[x]):
                    if (y not in prev) and (y not in (s, v)):
                        prev[y] = x
                        queue.append(y)
    return best


def strongly_connected(graph, nodes):
    """Tarjan's components, each a sorted list."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[node] = min(low[node], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                comps.append(sorted(comp))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return comps


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    top  = os.path.dirname(here)
    ap = argparse.ArgumentParser(description="call pairs between files")
    ap.add_argument("srcdir")
    ap.add_argument("-b", "--build", default=os.path.join(top, "build"))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--allow", action="append", default=[])
    ap.add_argument("--allow-file",
                    default=os.path.join(here, "call-pairs.allow"))
    args = ap.parse_args()
    allowed = {}
    for pair in args.allow:
        names = pair.split(",")
        if len(names) != 2:
            fail("--allow takes two file names, comma-separated: '%s'" %
                 pair)
        allowed[frozenset(names)] = "--allow"

    srcdir = os.path.realpath(args.srcdir)
    build  = os.path.realpath(args.build)
    if not os.path.isfile(os.path.join(build, "Makefile")):
        fail("%s is not a configured build tree (-b)" % build)
    sources = sorted(f for f in os.listdir(srcdir) if f.endswith(".c"))
    if not sources:
        fail("no .c files in %s" % srcdir)

    # the build tree's top source directory, to name sources as automake
    top_src = os.path.realpath(os.path.join(
        build, make_query(build, ["$(top_srcdir)"])[0]))
    rel = [os.path.relpath(os.path.join(srcdir, f), top_src) for f in sources]
    folder = os.path.relpath(srcdir, top_src)
    listed, report = read_allow_file(args.allow_file, folder, top_src)
    allowed.update(listed)
    cc, flags, target = target_flags(build, rel)

    defs  = {}                 # global function name -> defining file
    funcs = {}                 # (tu, title) -> (name, defining file)
    calls = []                 # (tu, source title, target title)
    with tempfile.TemporaryDirectory(prefix="call-pairs.") as tmp:
        for f in sources:
            obj = os.path.join(tmp, f[:-2] + ".o")
            cmd = cc + flags + ["-O0", "-Wno-error", "-fcallgraph-info",
                                "-c", os.path.join(srcdir, f), "-o", obj]
            out = subprocess.run(cmd, cwd=build, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE,
                                 universal_newlines=True)
            if out.returncode != 0:
                fail("compiling %s failed:\n%s\n%s" %
                     (f, " ".join(cmd), out.stderr))
            nodes, edges = parse_ci(obj[:-2] + ".ci")
            for title, (name, loc, defined) in nodes.items():
                if not defined:
                    continue
                path = os.path.realpath(os.path.join(build, loc))
                funcs[(f, title)] = (name, path)
                # static functions' titles carry their unit's name
                if ":" not in title:
                    defs[title] = path
            calls += [(f, s, t) for s, t in edges]

    # file -> file -> set of (caller, callee)
    pairs = defaultdict(lambda: defaultdict(set))
    for tu, s, t in calls:
        caller = funcs.get((tu, s))
        if caller is None:
            continue
        if (tu, t) in funcs:
            callee_name, callee_file = funcs[(tu, t)]
        elif t in defs:
            callee_name, callee_file = t, defs[t]
        else:
            continue              # outside the directory, or indirect
        a, b = caller[1], callee_file
        if (a == b) or (os.path.dirname(a) != srcdir) or \
           (os.path.dirname(b) != srcdir):
            continue
        pairs[os.path.basename(a)][os.path.basename(b)].add(
            (caller[0], callee_name))

    files = sorted(set(os.path.basename(p) for _, p in funcs.values()
                       if os.path.dirname(p) == srcdir))
    graph = {n: set(pairs[n].keys()) if n in pairs else set() for n in files}

    print("call pairs of %s (%d .c files, %d files with functions; "
          "target %s, gcc -fcallgraph-info)" %
          (folder, len(sources), len(files), target))
    if report is not None:
        print("%s is reported, not checked (%s): %s" %
              (folder, os.path.relpath(args.allow_file, top_src), report))
    print()
    mutual = []
    for a in files:
        for b in sorted(graph[a]):
            both = a in graph[b]
            if both and (a < b):
                mutual.append((a, b))
            print("  %-26s %s %-26s %3d" %
                  (a, "<->" if both else " ->", b, len(pairs[a][b])))
            if args.verbose:
                for caller, callee in sorted(pairs[a][b]):
                    print("        %s -> %s" % (caller, callee))
    edges_n = sum(len(v) for v in graph.values())
    print()
    print("%d ordered pairs; %d pairs of files call each other:" %
          (edges_n, len(mutual)))
    for a, b in mutual:
        why = allowed.get(frozenset((a, b)))
        print("  %s <-> %s%s" % (a, b, "" if why is None else
                                 "   allowed: " + why))
    stale = sorted(tuple(sorted(p)) for p in allowed
                   if tuple(sorted(p)) not in mutual)
    for a, b in stale:
        print("  (%s and %s are allowed to call each other, and here do "
              "not)" % (a, b))

    long_cycles, capped = 0, False
    print()
    print("cycles through more than two files:")
    for comp in strongly_connected(graph, files):
        if len(comp) < 3:
            continue
        members = set(comp)
        sub = {n: graph[n] & members for n in comp}
        n = simple_cycles_over_two(sub, members, CYCLE_COUNT_CAP)
        if n == 0:
            continue
        long_cycles += n
        capped = capped or (n >= CYCLE_COUNT_CAP)
        print("  %d files reach each other, %s%d simple cycles longer than "
              "two files:" % (len(comp), "at least " if
                              n >= CYCLE_COUNT_CAP else "", n))
        print("    " + " ".join(comp))
        seen = set()
        for s in comp:
            c = shortest_long_cycle(sub, s)
            if c is None:
                continue
            key = frozenset(c)
            if key in seen:
                continue
            seen.add(key)
            print("    " + " -> ".join(c + [c[0]]))
    if long_cycles == 0:
        print("  none")

    refused = [m for m in mutual if frozenset(m) not in allowed]
    if not args.check:
        return 0
    found = "%d pairs call each other (%d allowed), %s%d cycles longer " \
            "than two files" % (len(mutual), len(mutual) - len(refused),
                                "at least " if capped else "", long_cycles)
    print()
    if report is not None:
        print("%s: reported, not checked: %s" % (folder, found))
        return 0
    if refused or long_cycles:
        print("%s: FAILED: %s" % (folder, found))
        return 1
    print("%s: ok: %s" % (folder, found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
