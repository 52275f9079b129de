"""taplib.py: TAP for the sampler's Python tests that run croft run (test_prom,
test_nvml_run): one line a check with what differed, a skip that CI=true
makes a failure, and waiting on a condition rather than sleeping."""
import os
import sys
import time

CI = os.environ.get('CI') == 'true'
results = []  # (name, problem or None), in order


def skip_all(reason):
    if CI:
        print('Bail out! skip not allowed under CI=true: %s' % reason)
        sys.exit(1)
    print('1..0 # SKIP %s' % reason)
    sys.exit(0)


def check(name, problem, detail=''):
    results.append((name, problem))
    n = len(results)
    print(('ok %d - %s' % (n, name)) if not problem else ('not ok %d - %s # %s' % (n, name, problem)))
    for line in detail.splitlines():
        print('# ' + line)
    sys.stdout.flush()


def wait(pred, timeout):
    """pred's first true answer, or its last one after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)
