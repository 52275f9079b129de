#!/usr/bin/env python3
# test-hostile-dirs.py CROFT: croft stats run by root over directories
# someone else writes (security review finding 7): a symbolic link loop
# and links out of the tree are not followed (counted on stderr); a link
# to a root-only file is not read and nothing of a file's bytes reaches a
# skip reason; a FIFO given as a path is skipped, not waited on; a
# ./croft-data someone else made in the working directory is not read in
# place of the data_dir.  Root (a root-only file, another user's
# directory); CI=true makes a skip a failure.  Prints TAP.
import json
import os
import shutil
import subprocess
import sys
import tempfile

CROFT = os.path.abspath(sys.argv[1])
ROW = '{"unix_ms":1792504800000,"tgid":%d,"workload":"no-gpu"}\n'
FORGED = ('{"unix_ms":1792504800000,"span_ms":2000,"tgid":7,"workload":"gpu-held",'
          '"process":{"comm":"x","container_id":"' + 'ab' * 32 + '"},"gpus":[0]}\n')
HANG_GUARD_S = 300  # a reader that loops or waits forever is a failure, not a hung suite
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def croft(*args, cwd=None):
    try:
        p = subprocess.run([CROFT, 'stats', '--json', '--config', NO_CONF, *args], cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors='replace', timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        raise AssertionError('croft stats %s did not finish' % ' '.join(args))
    return p


@test
def links_below_the_paths_are_not_followed():
    d = os.path.join(TMP, 'loop')
    write(os.path.join(d, 'croft-dataset-a.jsonl'), ROW % 1)
    write(os.path.join(TMP, 'outside', 'croft-dataset-o.jsonl'), ROW % 2)
    for name in ('l1', 'l2', 'l3'):
        os.symlink('.', os.path.join(d, name))
    os.symlink('../outside', os.path.join(d, 'out'))
    os.symlink('../outside/croft-dataset-o.jsonl', os.path.join(d, 'croft-dataset-l.jsonl'))
    p = croft(d)
    rows = json.loads(p.stdout)['rows'] if p.returncode == 0 else p.stderr
    assert rows == 1, 'rows %s (exit %d)' % (rows, p.returncode)
    assert '5 symbolic links below the paths given not followed' in p.stderr, p.stderr
    # a link given as the path is the reader's choice: followed
    p = croft(os.path.join(d, 'out'))
    assert json.loads(p.stdout)['rows'] == 1, p.stderr


@test
def nothing_of_a_root_only_file_reaches_a_report():
    secret = write(os.path.join(TMP, 'secret'), 'topsecret:$6$salt$hash:19000::::::\n', 0o600)
    d = os.path.join(TMP, 'leak')
    write(os.path.join(d, 'croft-dataset-a.jsonl'), ROW % 1)
    write(os.path.join(d, 'croft-dataset-b.jsonl'), 'hunter2 is the password\n')
    os.symlink(secret, os.path.join(d, 'croft-dataset-x.jsonl'))
    p = croft(d)
    out = json.loads(p.stdout)
    for word in ('topsecret', 'hunter2'):
        assert word not in p.stdout + p.stderr, '%r in the report: %s' % (word, p.stdout[-400:])
    skips = out['input']['skips']
    assert [s['file'] for s in skips] == [os.path.join(d, 'croft-dataset-b.jsonl')], skips
    assert out['rows'] == 1 and p.returncode == 3, (out['rows'], p.returncode)


@test
def a_fifo_is_skipped_not_waited_on():
    fifo = os.path.join(TMP, 'fifo', 'croft-dataset.jsonl')
    os.makedirs(os.path.dirname(fifo))
    os.mkfifo(fifo)
    p = croft(fifo)
    out = json.loads(p.stdout)
    assert p.returncode == 3 and out['input']['skipped']['unreadable'] == 1, (p.returncode,
                                                                             out['input'])
    assert 'not the regular file listed' in p.stderr, p.stderr


@test
def someone_elses_croft_data_is_not_read_for_root():
    work = os.path.join(TMP, 'work')
    data = os.path.join(work, 'croft-data')
    write(os.path.join(data, 'croft-dataset-f.jsonl'), FORGED)
    os.chmod(data, 0o755)
    os.chown(data, 4242, 4242)  # a user made it where root runs croft stats
    p = croft(cwd=work)
    assert 'abababab' not in p.stdout, 'the forged container was read: %s' % p.stdout[:300]
    assert './croft-data is here but not read: owned by uid 4242' in p.stderr, p.stderr
    os.chown(data, 0, 0)  # root's own (a root-run croft run chowns it to croft or nobody)
    p = croft(cwd=work)
    assert 'reading ./croft-data, found here' in p.stderr, p.stderr
    assert json.loads(p.stdout)['rows'] == 1, p.stdout[:300]


def main():
    global TMP, NO_CONF
    if os.geteuid() != 0:
        if os.environ.get('CI') == 'true':
            print('Bail out! skip not allowed under CI=true: needs root')
            return 1
        print('1..0 # SKIP needs root (a root-only file, another user\'s directory)')
        return 0
    TMP = tempfile.mkdtemp(prefix='croft-hostile-dirs-')
    NO_CONF = write(os.path.join(TMP, 'empty.conf'), '')
    print('1..%d' % len(TESTS))
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
            print('ok %d - %s' % (i, fn.__name__.replace('_', ' ')))
        except AssertionError as e:
            failed += 1
            print('not ok %d - %s # %s' % (i, fn.__name__.replace('_', ' '), e))
        sys.stdout.flush()
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
