#!/usr/bin/python3
"""test-circles.py [--source SRC_DIR] BUILD_DIR [FOLDER...]: no import
circles (in the folders named, else in every folder).  Within each folder's
programs and libraries (object files under BUILD/<folder>/*.p), file A
imports file B when A's object uses a symbol B's object defines; a circle
is a set of files each reachable from every other.  One TAP check a
folder; a failure names the files of each circle and the symbols on its
edges.  Reads object files with nm (binutils).  With --source, also no
arrow from an engine to a report: under SRC_DIR, no file of a folder named
engine includes a header of a sibling folder (the reports over it), one
TAP check an engine; a failure names the file, line and header; and no
header over HEADER_MAX lines, no C file over FILE_MAX (FILE_CAPS: the ones
held at their size until split).  Last, no file-scope mutable global in the
objects of BUILD_DIR outside tests/ (a symbol in .bss or .data, not a
function's static) but those of GLOBALS, each with why no struct owns it:
a new one fails; one gone is said, to be struck from the list."""
import collections, glob, os, re, subprocess, sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
HEADER_MAX, FILE_MAX = 500, 800  # lines (house rule 11 and 21)
FILE_CAPS = {  # C files over FILE_MAX, held at their size until split
}
GLOBALS = {  # (source, symbol): why no struct owns it
    ('cli/croftctl.c', 'runtime_dir'): 'the --runtime-dir option, read by every request',
    ('common/daemon_config.c', 'config_never_read'): "the daemon's config file missing since start, "
                                                     'kept across reloads (one daemon a process)',
    ('common/daemon_ctl.c', 'daemon_self'): "the daemon's name and start for status (one a process)",
    ('common/fileio.c', 'kept_dirs'): 'directories file_keep_dir opened before the sandbox, '
                                      'for callers that hold no context',
    ('common/fileio.c', 'kept_dirs_count'): 'how many kept_dirs',
    ('common/log.c', 'log_name'): "the logger's settings, as openlog's (log_* take no context)",
    ('common/log.c', 'log_verbose'): "the logger's settings, as openlog's",
    ('common/log.c', 'log_journal'): "the logger's settings, as openlog's",
    ('common/sock.c', 'sock_shared'): 'the shared daemon identity every socket is checked against',
    ('probe/loader.c', 'libbpf_first'): "libbpf's print callback takes no context (libbpf_set_print)",
    ('probe/loader.c', 'libbpf_marked'): "libbpf's print callback takes no context",
    ('run/run.c', 'writer'): "croft run's children, reached from its signal and child callbacks",
    ('run/run.c', 'probe'): "croft run's children",
    ('run/run.c', 'sampler'): "croft run's children",
    ('run/run.c', 'ready_timer'): "croft run's readiness timer, beside its children",
}
MUTABLE_SECTIONS = ('.bss', '.data', '.tbss', '.tdata', '*COM*')  # .data.rel.ro is not


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


def engine_arrows(engine):
    """(file, line number, header) of each #include in engine's files of a
    header in a folder beside it, by name (the build's include paths) or by
    a path that leads there."""
    parent = os.path.dirname(engine)
    reports = [d for d in sorted(os.listdir(parent))
               if os.path.isdir(os.path.join(parent, d)) and d != 'engine']
    report_headers = {os.path.basename(h): d for d in reports
                      for h in glob.glob(os.path.join(parent, d, '**', '*.h'), recursive=True)}
    own = {os.path.basename(h) for h in glob.glob(os.path.join(engine, '**', '*.h'), recursive=True)}
    found = []
    for src in sorted(glob.glob(os.path.join(engine, '**', '*.[ch]'), recursive=True)):
        with open(src, encoding='utf-8', errors='replace') as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(src), m.group(1)))
                into_report = any(target.startswith(os.path.join(parent, d) + os.sep) for d in reports)
                by_name = '/' not in m.group(1) and m.group(1) in report_headers and m.group(1) not in own
                if into_report or by_name:
                    found.append((src, n, m.group(1)))
    return found


def check_engines(src, first):
    """TAP lines from number first for each engine folder under src; the failures."""
    engines = sorted(os.path.join(root, d) for root, dirs, _ in os.walk(src)
                     if not os.path.relpath(root, src).startswith(('build', '.', 'tests'))
                     for d in dirs if d == 'engine')
    lines, failed = [], 0
    for i, engine in enumerate(engines, first):
        arrows = engine_arrows(engine)
        rel = os.path.relpath(engine, src)
        lines.append('%s %d - %s: no arrow to a report' % ('not ok' if arrows else 'ok', i, rel))
        for path, n, header in arrows:
            failed += 1
            lines.append('#   %s:%d includes "%s"' % (os.path.relpath(path, src), n, header))
    return len(engines), lines, failed


def sources(src, exts):
    """The tree's files ending in exts, relative to src (no build dirs, no dot dirs)."""
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith(('build', '.')) and d != 'node_modules')
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.relpath(os.path.join(root, f), src)


def check_sizes(src):
    """(ok, what, diagnostics) for the headers and the C files."""
    lines = {}
    for rel in sources(src, ('.c', '.h')):
        with open(os.path.join(src, rel), 'rb') as f:
            lines[rel] = f.read().count(b'\n')
    big_h = ['%s: %d lines' % (r, n) for r, n in lines.items() if r.endswith('.h') and n > HEADER_MAX]
    big_c = ['%s: %d lines%s' % (r, n, ', over its cap %d' % FILE_CAPS[r] if r in FILE_CAPS else '')
             for r, n in lines.items() if n > max(FILE_MAX, FILE_CAPS.get(r, 0))]
    said = ['%s is %d lines now: strike it from FILE_CAPS' % (r, lines[r])
            for r in FILE_CAPS if r in lines and lines[r] <= FILE_MAX]
    return [(not big_h, 'no header over %d lines' % HEADER_MAX, big_h),
            (not big_c, 'no C file over %d lines (%d held at their size)' % (FILE_MAX, len(FILE_CAPS)),
             big_c + said)]


def mutable_globals(build):
    """{(source, symbol)} of the file-scope mutable variables outside tests/."""
    found = set()
    for p in glob.glob(os.path.join(build, '**', '*.p'), recursive=True):
        folder = os.path.relpath(os.path.dirname(p), build)
        if folder.split(os.sep)[0] == 'tests':
            continue
        for obj in glob.glob(os.path.join(p, '*.o')):
            out = subprocess.run(['objdump', '-t', obj], capture_output=True, text=True, check=True)
            for line in out.stdout.splitlines():
                f = line.split()
                if len(f) < 6 or 'O' not in f[1:-3] or '.' in f[-1]:
                    continue  # not a variable, or a function's static (name.N)
                section = f[-3]
                if section in MUTABLE_SECTIONS or ('.' + section.split('.')[1] in MUTABLE_SECTIONS
                                                   and not section.startswith('.data.rel.ro')):
                    found.add((os.path.join(folder, name(obj)), f[-1]))
    return found


def check_globals(build):
    found = mutable_globals(build)
    new = sorted(found - GLOBALS.keys())
    gone = sorted(GLOBALS.keys() - found)
    return (not new, 'no new file-scope mutable global (%d held in GLOBALS)' % len(GLOBALS),
            ['%s: %s (put it in the struct that owns it)' % g for g in new] +
            ['%s: %s is gone: strike it from GLOBALS' % g for g in gone])


def main():
    src = None
    if sys.argv[1] == '--source':
        src = sys.argv[2]
        del sys.argv[1:3]
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
    engines, engine_lines, failed = check_engines(src, len(folders) + 1) if src else (0, [], 0)
    rules = (check_sizes(src) if src else []) + [check_globals(build)]
    print('1..%d' % (len(folders) + engines + len(rules)))
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
    print('\n'.join(engine_lines))
    for i, (ok, what, notes) in enumerate(rules, len(folders) + engines + 1):
        failed += not ok
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
        print(''.join('#   %s\n' % n for n in notes), end='')
    return 1 if failed else 0


sys.exit(main())
