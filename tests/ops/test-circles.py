#!/usr/bin/python3
"""test-circles.py BUILD_DIR [FOLDER...]: no import circles (in the
folders named, else in every folder).  Within each folder's
programs and libraries (object files under BUILD/<folder>/*.p), file A
imports file B when A's object uses a symbol B's object defines; a circle
is a set of files each reachable from every other.  One TAP check a
folder; a failure names the files of each circle and the symbols on its
edges.  Reads object files with nm (binutils)."""
import collections, glob, os, subprocess, sys


def symbols(obj):
    defined, used = set(), set()
    out = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBRC':
            defined.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            used.add(f[1])
    return defined, used


def imports(objs):
    """file -> {file it imports: the symbols}"""
    syms = {o: symbols(o) for o in objs}
    owner = {s: o for o, (d, _) in syms.items() for s in d}
    edges = {o: collections.defaultdict(set) for o in objs}
    for o, (_, used) in syms.items():
        for s in used:
            if s in owner and owner[s] != o:
                edges[o][owner[s]].add(s)
    return edges


def reach(edges, start):
    """Every file start imports, directly or through others."""
    seen, frontier = set(), [start]
    while frontier:
        for w in edges[frontier.pop()]:
            if w not in seen:
                seen.add(w)
                frontier.append(w)
    return seen


def circles(edges):
    reachable = {v: reach(edges, v) for v in edges}
    found, done = [], set()
    for v in sorted(edges):
        if v in done or v not in reachable[v]:
            continue
        members = sorted(w for w in reachable[v] if v in reachable[w])
        done.update(members)
        found.append(members)
    return found


def name(obj):
    return os.path.basename(obj).removesuffix('.o')


def main():
    build = sys.argv[1]
    folders = collections.defaultdict(list)
    for p in glob.glob(os.path.join(build, '**', '*.p'), recursive=True):
        rel = os.path.relpath(os.path.dirname(p), build)
        if rel.split(os.sep)[0] != 'tests':
            folders[rel] += glob.glob(os.path.join(p, '*.o'))
    held = sys.argv[2:]
    folders = {f: objs for f, objs in folders.items() if objs and (not held or f in held)}
    if not folders:
        print('1..1\nnot ok 1 - no object files under %s' % build)
        return 1
    print('1..%d' % len(folders))
    failed = 0
    for i, folder in enumerate(sorted(folders), 1):
        edges = imports(folders[folder])
        found = circles(edges)
        print('%s %d - %s: no import circle' % ('not ok' if found else 'ok', i, folder))
        for members in found:
            failed += 1
            print('# circle: ' + ' <-> '.join(name(m) for m in members))
            for a in members:
                for b in members:
                    if b in edges[a]:
                        print('#   %s -> %s: %s' % (name(a), name(b), ' '.join(sorted(edges[a][b])[:6])))
    return 1 if failed else 0


sys.exit(main())
