#!/usr/bin/env python3
"""gpu_activity_report.py: the table and the pass rule of gpu-activity.sh
from a results directory: windows.txt (workload pid t0_ms t1_ms ok
[nvidia-smi pid]), croft's rows (data/croft-dataset*.jsonl), nvidia-smi pmon
-o T (pmon.txt) and power.draw (power.csv), both in local time.  Exit 0 when
the pass rule holds, 1 when not.

  gpu_activity_report.py RESULTS_DIR"""
import glob
import json
import os
import sys
import time

IDLE_SM_LIMIT = 5.0      # NVML SM above this: the process was computing
MISCALLED_MAX = 0.01     # idle rows while computing, of all process-seconds
HOLDER_IDLE_MIN = 0.95   # the idle holder's seconds called idle


def local_s(day, hms):
    """Unix seconds of a local 'HH:MM:SS[.mmm]' on day ('YYYY/MM/DD' or 'YYYYMMDD')."""
    day = day.replace('/', '')
    whole, _, frac = hms.partition('.')
    t = time.mktime(time.strptime(day + ' ' + whole, '%Y%m%d %H:%M:%S'))
    return t + (float('0.' + frac) if frac else 0.0)


def pmon(path, day):
    """{pid: [(unix_s, sm)]}: '-' (no sample in the period) is 0."""
    out = {}
    for line in open(path, errors='replace') if os.path.exists(path) else []:
        f = line.split()
        if not f or f[0].startswith('#') or len(f) < 5:
            continue
        try:
            t, pid = local_s(day, f[0]), int(f[2])
        except ValueError:
            continue
        out.setdefault(pid, []).append((t, 0.0 if f[4] == '-' else float(f[4])))
    return out


def power(path):
    """[(unix_s, watts)] of GPU 0."""
    out = []
    for line in open(path, errors='replace') if os.path.exists(path) else []:
        f = [x.strip() for x in line.split(',')]
        if len(f) == 3 and f[1] == '0':
            try:
                day, hms = f[0].split(' ')
                out.append((local_s(day, hms), float(f[2])))
            except ValueError:
                continue
    return out


def rows_of(results):
    rows = []
    for path in sorted(glob.glob(os.path.join(results, 'data', 'croft-dataset*.jsonl'))):
        for line in open(path, errors='replace'):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def within(samples, t0, t1):
    return [v for t, v in samples if t0 - 0.5 <= t <= t1 + 0.5]


def main():
    results = sys.argv[1]
    day = time.strftime('%Y%m%d', time.localtime(os.path.getmtime(
        os.path.join(results, 'windows.txt'))))
    sm, watts, rows = pmon(os.path.join(results, 'pmon.txt'), day), \
        power(os.path.join(results, 'power.csv')), rows_of(results)
    total_s = miscalled_s = 0.0
    holder = [0.0, 0.0]  # idle seconds, seconds
    print('%-9s %5s %7s %6s %-8s %-13s %8s %8s %7s' % (
        'workload', 't_s', 'ioctls', 'waits', 'verdict', 'source', 'croft_sm', 'nvml_sm',
        'power_w'))
    for line in open(os.path.join(results, 'windows.txt')):
        f = line.split()
        name, pid, t0, t1 = f[0], int(f[1]), int(f[2]), int(f[3])
        if f[4] != 'ok':
            print('%-9s did not run' % name)
            continue
        mine = [r for r in rows if r['tgid'] == pid and t0 < r['unix_ms'] <= t1]
        for r in mine:
            end, span = r['unix_ms'] / 1e3, r['span_ms'] / 1e3
            nv = within(sm.get(pid, []), end - span, end)
            pw = within(watts, end - span, end)
            nv_sm = max(nv) if nv else None
            idle = r.get('gpu_activity') == 'idle'
            total_s += span
            if idle and nv_sm is not None and nv_sm > IDLE_SM_LIMIT:
                miscalled_s += span
            if name == 'context':
                holder[1] += span
                holder[0] += span if idle else 0
            print('%-9s %5.0f %7s %6s %-8s %-13s %8s %8s %7s' % (
                name, end - t0 / 1e3, r.get('ioctl_count', '-'), r.get('gpu_wait_count', '-'),
                r.get('gpu_activity', '-'), r.get('gpu_activity_source', '-'),
                r.get('gpu_sm_percent', '-'), '-' if nv_sm is None else '%.0f' % nv_sm,
                '%.1f' % (sum(pw) / len(pw)) if pw else '-'))
    share = miscalled_s / total_s if total_s else 1.0
    idle_share = holder[0] / holder[1] if holder[1] else 0.0
    ok1, ok2 = total_s > 0 and share <= MISCALLED_MAX, idle_share >= HOLDER_IDLE_MIN
    print('%s  1. idle while NVML SM > %.0f%%: %.1f of %.1f process-seconds (%.2f%%, <= %.0f%%)' %
          ('PASS' if ok1 else 'FAIL', IDLE_SM_LIMIT, miscalled_s, total_s, 100 * share,
           100 * MISCALLED_MAX))
    print('%s  2. the idle holder idle in %.1f of %.1f s (%.1f%%, >= %.0f%%)' % (
        'PASS' if ok2 else 'FAIL', holder[0], holder[1], 100 * idle_share,
        100 * HOLDER_IDLE_MIN))
    return 0 if ok1 and ok2 else 1


if __name__ == '__main__':
    sys.exit(main())
