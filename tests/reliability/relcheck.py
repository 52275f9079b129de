#!/usr/bin/env python3
"""relcheck.py: checks what croft wrote, for the reliability suite.

Reads a data directory (segments in time order, .zst through `zstd -dc`,
then the live file) and checks every line: strict UTF-8, one JSON object
per line, no (tgid, unix_ms) twice.  Subcommands add checks on top and
print the figures they measured as `key=value`.  Test process, any user.
"""
import json
import os
import re
import subprocess
import sys

SEG_RE = re.compile(r'^croft-dataset-\d{8}T\d{6}Z\.jsonl(\.zst)?$')
LIVE = 'croft-dataset.jsonl'


def fail(msg):
    print('FAIL: ' + msg, file=sys.stderr)
    sys.exit(1)


def segments(data):
    names = sorted(n for n in os.listdir(data) if SEG_RE.match(n))
    out = []
    for n in names:
        # a segment caught between compression and unlink: the .jsonl counts
        if n.endswith('.zst') and n[:-4] in names:
            continue
        out.append(n)
    return out


def read_blob(path):
    if path.endswith('.zst'):
        p = subprocess.run(['zstd', '-q', '-dc', path], capture_output=True)
        if p.returncode != 0:
            fail('%s does not decompress: %s' % (path, p.stderr.decode(errors='replace')))
        return p.stdout
    with open(path, 'rb') as f:
        return f.read()


def dataset_blobs(data, live=True):
    for n in segments(data):
        yield n, read_blob(os.path.join(data, n))
    if live and os.path.exists(os.path.join(data, LIVE)):
        yield LIVE, read_blob(os.path.join(data, LIVE))


def parse_all(data, live=True):
    """Every row as a dict, in file order; fails on any bad line."""
    rows = []
    for name, blob in dataset_blobs(data, live):
        if blob and not blob.endswith(b'\n'):
            fail('%s: last line has no newline (torn tail left in place)' % name)
        for i, raw in enumerate(blob.split(b'\n')[:-1] if blob else []):
            try:
                text = raw.decode('utf-8', errors='strict')
            except UnicodeDecodeError as e:
                fail('%s:%d: not valid UTF-8: %s' % (name, i + 1, e))
            try:
                obj = json.loads(text)
            except ValueError as e:
                fail('%s:%d: not JSON: %s: %.200r' % (name, i + 1, e, text))
            if not isinstance(obj, dict):
                fail('%s:%d: not one JSON object' % (name, i + 1))
            rows.append(obj)
    return rows


def check_unique(rows):
    seen = {}
    dups = 0
    for r in rows:
        if 'tgid' not in r or 'unix_ms' not in r:
            fail('row without tgid/unix_ms: %.200r' % r)
        # a process is (tgid, start_ms): under churn a pid is reused, and the
        # last row of one process and a row of the next can share a poll
        k = (r['tgid'], r.get('process', {}).get('start_ms'), r['unix_ms'])
        if k in seen:
            dups += 1
            if dups < 5:
                print('duplicate row (tgid %d, start_ms %s, unix_ms %d)' % k, file=sys.stderr)
        seen[k] = True
    if dups:
        fail('%d rows duplicated by (tgid, start_ms, unix_ms)' % dups)


def cmd_lines(data):
    rows = parse_all(data)
    check_unique(rows)
    polls = sorted({r['unix_ms'] for r in rows})
    print('rows=%d polls=%d segments=%d' % (len(rows), len(polls), len(segments(data))))
    return rows


def cmd_cadence(data, pids_file, idle_every, since_ms, until_ms):
    """Every watched tgid has a row at least every idle_every polls of the
    sampler while it lived (the window since..until, which the test knows
    its processes spanned); returns the number of missed dues."""
    rows = parse_all(data)
    check_unique(rows)
    with open(pids_file) as f:
        pids = {int(x) for x in f.read().split()}
    polls = sorted({r['unix_ms'] for r in rows if since_ms <= r['unix_ms'] <= until_ms})
    if len(polls) < 3 * idle_every:
        fail('only %d polls in the window' % len(polls))
    index = {ms: i for i, ms in enumerate(polls)}
    seen = {p: [] for p in pids}
    for r in rows:
        if r['tgid'] in seen and r['unix_ms'] in index:
            seen[r['tgid']].append(index[r['unix_ms']])
    missing = 0
    # the first row comes at a process's second poll: allow idle_every + 1
    for p, idx in seen.items():
        idx.sort()
        marks = [-1] + idx + [len(polls)]
        gaps = [b - a for a, b in zip(marks, marks[1:])]
        worst = max(gaps)
        if worst > idle_every + 1:
            missing += 1
            if missing < 5:
                print('tgid %d: %d rows over %d polls, longest gap %d polls' %
                      (p, len(idx), len(polls), worst), file=sys.stderr)
    print('watched=%d polls=%d rows_watched=%d missed=%d' %
          (len(pids), len(polls), sum(len(v) for v in seen.values()), missing))
    if missing:
        fail('%d of %d watched processes missed a due row' % (missing, len(pids)))


def cmd_gaps(data, interval_ms, kills_file):
    """Consecutive polls more than 1.9 intervals apart need a sampler kill
    (or restart) between them: anything else is a lost poll."""
    rows = parse_all(data)
    check_unique(rows)
    polls = sorted({r['unix_ms'] for r in rows})
    kills = []
    if os.path.exists(kills_file):
        with open(kills_file) as f:
            kills = sorted(int(x) for x in f.read().split())
    lost = 0
    for a, b in zip(polls, polls[1:]):
        if b - a > 1.9 * interval_ms and not any(a - interval_ms <= k <= b for k in kills):
            lost += 1
            if lost < 5:
                print('gap of %d ms between polls %d and %d with no sampler restart' %
                      (b - a, a, b), file=sys.stderr)
    print('rows=%d polls=%d sampler_restarts=%d unexplained_gaps=%d' %
          (len(rows), len(polls), len(kills), lost))
    if lost:
        fail('%d polls lost' % lost)


def cmd_complete(data, pids_file):
    """Every poll that wrote rows wrote one for each watched process (all
    alive throughout, idle_every 1): a partly lost batch shows here."""
    rows = parse_all(data)
    check_unique(rows)
    with open(pids_file) as f:
        pids = {int(x) for x in f.read().split()}
    per = {}
    for r in rows:
        if r['tgid'] in pids:
            per[r['unix_ms']] = per.get(r['unix_ms'], 0) + 1
    short = {ms: n for ms, n in per.items() if n != len(pids)}
    print('rows=%d polls_with_watched=%d watched=%d partial_polls=%d' %
          (len(rows), len(per), len(pids), len(short)))
    if short:
        ms = sorted(short)[0]
        fail('%d polls lack watched rows (first: unix_ms %d has %d of %d)' %
             (len(short), ms, short[ms], len(pids)))


def cmd_sent(data, proxy_log, unique=True):
    """Every batch the sampler sent (relproxy.py's log) is in the dataset
    whole: its poll's unix_ms carries exactly its row count; each epoch's
    seqs have no hole; nothing twice.  unique=False where the wall clock
    went back: two polls may then share a unix_ms."""
    rows = parse_all(data)
    if unique:
        check_unique(rows)
    per_ms = {}
    for r in rows:
        per_ms[r['unix_ms']] = per_ms.get(r['unix_ms'], 0) + 1
    batches, sends, acks = {}, 0, set()
    with open(proxy_log) as f:
        for line in f:
            w = line.split()
            if w[0] == 'batch':
                sends += 1
                batches[(w[1], int(w[2]))] = (int(w[3]), int(w[4]))
            elif w[0] == 'ack':
                acks.add((w[1], int(w[2])))
    lost = []
    want_ms = {}
    for key, (ms, n) in batches.items():
        want_ms[ms] = want_ms.get(ms, 0) + n
    for ms, n in want_ms.items():
        if per_ms.get(ms, 0) != n:
            lost.append((ms, n, per_ms.get(ms, 0)))
    holes = 0
    epochs = sorted({e for e, _ in batches})
    for e in epochs:
        seqs = sorted(s for ee, s in batches if ee == e)
        holes += (seqs[-1] - seqs[0] + 1) - len(seqs)
    unsent = sorted(ms for ms in per_ms if ms not in want_ms)
    print('batches=%d sends=%d resends=%d acked=%d epochs=%d rows=%d' %
          (len(batches), sends, sends - len(batches), len(acks), len(epochs), len(rows)))
    if lost:
        fail('%d sent batches not in the dataset whole (first: unix_ms %d, %d rows sent, %d kept)' %
             (len(lost), *sorted(lost)[0]))
    if holes:
        fail('%d holes in the sampler\'s batch numbering' % holes)
    if unsent:
        fail('%d polls in the dataset were never sent' % len(unsent))


def cmd_synthetic(data, acks_file):
    """wclient's synthetic rows (seq, row): each at most once, batches whole,
    present seqs one contiguous run (retention only cuts the oldest), every
    acked seq at or after that run's start present."""
    rows = parse_all(data)
    per = {}
    for r in rows:
        k = (r['seq'], r['row'])
        if k in per:
            fail('row seq %d row %d written twice' % k)
        per[k] = True
    seqs = sorted({s for s, _ in per})
    counts = {}
    for s, _ in per:
        counts[s] = counts.get(s, 0) + 1
    if seqs:
        want = max(counts.values())
        torn = [s for s in seqs if counts[s] != want]
        if torn:
            fail('batches not whole: %r' % torn[:5])
        if seqs != list(range(seqs[0], seqs[-1] + 1)):
            fail('seqs not contiguous from %d to %d' % (seqs[0], seqs[-1]))
    acked = []
    if os.path.exists(acks_file):
        with open(acks_file) as f:
            acked = [int(x) for x in f.read().split()]
    lo = seqs[0] if seqs else 1
    lost = [a for a in acked if a >= lo and a not in counts]
    if lost:
        fail('acked batches lost: %r' % lost[:5])
    if acked and (not seqs or seqs[-1] < max(acked)):
        fail('newest acked batch %d missing' % max(acked))
    print('batches=%d first_seq=%d acked=%d' % (len(seqs), lo, len(acked)))


def main(argv):
    if len(argv) < 3:
        fail('usage: relcheck.py lines|cadence|gaps|synthetic DATA_DIR ...')
    cmd, data = argv[1], argv[2]
    if cmd == 'lines':
        cmd_lines(data)
    elif cmd == 'cadence':
        cmd_cadence(data, argv[3], int(argv[4]), int(argv[5]), int(argv[6]))
    elif cmd == 'gaps':
        cmd_gaps(data, int(argv[3]), argv[4])
    elif cmd == 'complete':
        cmd_complete(data, argv[3])
    elif cmd == 'sent':
        cmd_sent(data, argv[3])
    elif cmd == 'sent-clock':
        cmd_sent(data, argv[3], unique=False)
    elif cmd == 'synthetic':
        cmd_synthetic(data, argv[3])
    else:
        fail('unknown subcommand ' + cmd)


if __name__ == '__main__':
    main(sys.argv)
