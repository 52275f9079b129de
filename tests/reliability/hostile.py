#!/usr/bin/env python3
"""hostile.py: processes with hostile names for the reliability suite, and
the check of their rows.

`spawn DIR PIDFILE RELPROCS`: starts the hostile processes (comm, exe, cwd,
cmdline and cgroup names with newlines, ')', quotes, ESC, 0xff, cut
multibyte characters, " (deleted)", a 4 KiB cwd, a 128 KiB argv) plus one
plain control process, writes "kind pid" lines to PIDFILE, waits for
SIGTERM.  `check DATA PIDFILE SCHEMA`: every line strict UTF-8 JSON
(relcheck) and accepted by the row schema, each process's row present, raw
bytes kept in *_b64 where a string was cut (a CROFT_LABEL too), the
control row as it should be.  Test process; cgroups need root.
"""
import base64
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relcheck  # noqa: E402

BAD = b'\n)"\x1b\xff\xe2\x82'          # newline, paren, quote, ESC, 0xff, cut euro sign
CG_ROOTS = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified', '/sys/fs/cgroup/memory',
            '/sys/fs/cgroup/cpu']


def spawn_hold(relprocs, exe, comm, argv_extra=(), cwd=None, env=None):
    pid = os.fork()
    if pid == 0:
        try:
            if cwd:
                os.chdir(cwd)
            if env is None:
                os.execv(exe, [exe, b'hold', comm] + list(argv_extra))
            os.execve(exe, [exe, b'hold', comm] + list(argv_extra), env)
        finally:
            os._exit(127)
    return pid


def deep_cwd(base):
    """A directory whose absolute path is just under 4 KiB, hostile names."""
    path = os.fsencode(base)
    part = b'd' + BAD + b'x' * 180
    os.chdir(path)
    while len(path) + len(part) + 1 < 4000:
        os.mkdir(part)
        os.chdir(part)
        path += b'/' + part
    os.chdir('/')
    return path


def hostile_cgroup(pid):
    """Moves pid to a cgroup with a hostile name where the kernel takes one."""
    made = []
    for name in [b'croft-rel' + BAD + b' (deleted)', b'croft-rel)"\x1b\xff (deleted)']:
        for root in CG_ROOTS:
            d = os.fsencode(root) + b'/' + name
            if not os.access(os.path.join(root, 'cgroup.procs'), os.W_OK):
                continue
            try:
                os.mkdir(d)
            except FileExistsError:
                pass
            except OSError:
                continue
            made.append(d)
            try:
                with open(d + b'/cgroup.procs', 'w') as f:
                    f.write(str(pid))
            except OSError:
                pass
        if made:
            break
    return made


def cmd_spawn(base, pidfile, relprocs):
    kids = []
    exe_bad = os.path.join(os.fsencode(base), b'exe' + BAD + b' (deleted)')
    shutil.copy(relprocs, exe_bad)
    os.chmod(exe_bad, 0o755)
    gone = os.path.join(os.fsencode(base), b'gone')
    shutil.copy(relprocs, gone)
    os.chmod(gone, 0o755)
    cwd = deep_cwd(base)
    big_argv = [b'arg' + BAD + bytes([65 + i % 26]) * 1024 for i in range(128)]
    rp = os.fsencode(relprocs)
    kids.append(('control', spawn_hold(relprocs, rp, b'croft-control')))
    kids.append(('comm', spawn_hold(relprocs, rp, b'c' + BAD + b'q')))
    kids.append(('comm-cut', spawn_hold(relprocs, rp, b'abcdefghijklm\xe2\x82\xac')))
    kids.append(('comm-deleted', spawn_hold(relprocs, rp, b'x (deleted)')))
    kids.append(('exe', spawn_hold(relprocs, exe_bad, b'hostile-exe')))
    kids.append(('exe-gone', spawn_hold(relprocs, gone, b'hostile-gone')))
    kids.append(('cwd', spawn_hold(relprocs, rp, b'hostile-cwd', cwd=cwd)))
    kids.append(('argv', spawn_hold(relprocs, rp, b'hostile-argv', big_argv)))
    kids.append(('label', spawn_hold(relprocs, rp, b'hostile-label',
                                     env={b'CROFT_LABEL': b'exp' + BAD + b'42'})))
    cg_pid = spawn_hold(relprocs, rp, b'hostile-cgroup')
    kids.append(('cgroup', cg_pid))
    cgroups = hostile_cgroup(cg_pid)
    # wait until each has exec'd (its exe is no longer python) before unlinking
    for _, pid in kids:
        for _ in range(200):
            try:
                if b'python' not in os.readlink(b'/proc/%d/exe' % pid):
                    break
            except OSError:
                pass
            time.sleep(0.01)
    os.unlink(gone)
    with open(pidfile + '.tmp', 'w') as f:
        for kind, pid in kids:
            f.write('%s %d\n' % (kind, pid))
    os.rename(pidfile + '.tmp', pidfile)
    print('hostile processes: %d, hostile cgroups: %d, cwd %d bytes, argv %d KiB' %
          (len(kids), len(cgroups), len(cwd), sum(len(a) + 1 for a in big_argv) // 1024),
          flush=True)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    for _, pid in kids:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    for d in cgroups:
        try:
            os.rmdir(d)
        except OSError:
            pass


def raw_of(row, key):
    """The raw bytes behind a process string: *_b64 when present."""
    proc = row.get('process', {})
    if key + '_b64' in proc:
        return base64.b64decode(proc[key + '_b64'])
    if key in proc:
        return proc[key].encode('utf-8')
    return None


def schema_check(rows, schema_path):
    """Every row croft wrote, hostile ones and their *_b64 keys among them,
    is one the schema (build/contract/croft-dataset.schema.json) accepts."""
    import json
    import jsonschema
    with open(schema_path) as f:
        v = jsonschema.Draft202012Validator(json.load(f))
    for r in rows:
        errors = sorted(v.iter_errors(r), key=str)
        if errors:
            relcheck.fail('the schema refuses a row croft wrote: %s: %s' %
                          (errors[0].message[:200], json.dumps(r)[:300]))


def cmd_check(data, pidfile, schema):
    rows = relcheck.parse_all(data)
    relcheck.check_unique(rows)
    with open(pidfile) as f:
        kids = [(k, int(p)) for k, p in (line.split() for line in f)]
    by_pid = {}
    for r in rows:
        by_pid.setdefault(r['tgid'], []).append(r)
    for kind, pid in kids:
        if pid not in by_pid:
            relcheck.fail('no row for the %s process (tgid %d)' % (kind, pid))
    r = {k: by_pid[p][-1] for k, p in kids}
    want = {
        'control': ('comm', b'croft-control'),
        'comm': ('comm', b'c' + BAD + b'q'),
        'comm-cut': ('comm', b'abcdefghijklm\xe2\x82'),
        'comm-deleted': ('comm', b'x (deleted)'),
    }
    for kind, (key, raw) in want.items():
        got = raw_of(r[kind], key)
        if got != raw:
            relcheck.fail('%s: %s is %r, want %r' % (kind, key, got, raw))
    exe = raw_of(r['exe'], 'exe')
    if not exe or not exe.endswith(b'exe' + BAD + b' (deleted)'):
        relcheck.fail('hostile exe kept as %r' % exe)
    gone = raw_of(r['exe-gone'], 'exe')
    if not gone or b'gone' not in gone:
        relcheck.fail('deleted exe kept as %r' % gone)
    cwd = raw_of(r['cwd'], 'cwd')
    if not cwd or len(cwd) < 3900 or BAD not in cwd:
        relcheck.fail('4 KiB cwd kept as %d bytes' % (len(cwd) if cwd else 0))
    label = base64.b64decode(r['label']['label_b64']) if 'label_b64' in r['label'] else None
    if label != b'exp' + BAD + b'42':
        relcheck.fail('hostile CROFT_LABEL kept as %r (row %r)' % (label, r['label'].get('label')))
    schema_check(rows, schema)
    cg = r['cgroup'].get('process', {})
    cg_raw = raw_of(r['cgroup'], 'cgroup') or b''
    if os.geteuid() == 0 and b'croft-rel' not in cg_raw:
        relcheck.fail('the hostile cgroup is not in the row: %r' % cg_raw)
    if b'croft-rel' in cg_raw and not cg_raw.endswith(b')"\x1b\xff (deleted)'):
        relcheck.fail('hostile cgroup name kept as %r' % cg_raw)
    print('rows=%d hostile_rows=%d lines valid UTF-8 JSON; exe %r; cgroup %r' %
          (len(rows), sum(len(by_pid[p]) for _, p in kids), exe[-24:], cg.get('cgroup')))


if __name__ == '__main__':
    if sys.argv[1] == 'spawn':
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
        cmd_spawn(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == 'check':
        cmd_check(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        relcheck.fail('usage: hostile.py spawn DIR PIDFILE RELPROCS | check DATA PIDFILE SCHEMA')
