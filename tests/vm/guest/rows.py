#!/usr/bin/python3
"""rows.py: croft's rows in the VM, for checks.sh (root, inside the VM).

  rows.py wait CGROUP COUNT TIMEOUT_S [--since MS]
      waits until COUNT rows of processes in CGROUP (process.cgroup) carry
      cgroup_usage, then prints them, one JSON object a line
  rows.py cglog MEMORY_DIR CPU_DIR LOG
      every LOG_INTERVAL_S until killed: "unix_ms memory usage_usec" of
      the cgroup, read by the test itself: v2 memory.current and cpu.stat
      usage_usec (both dirs the same), or v1 memory.usage_in_bytes and
      cpuacct.usage (ns)
  rows.py memfit ROWS_FILE LOG TOLERANCE_BYTES
      each row's cgroup_usage.memory_bytes against the memory.current LOG
      read within READ_WINDOW_MS of the row's poll: how far it lies outside
      them; fails above TOLERANCE_BYTES
  rows.py cpufit ROWS_FILE LOG TOLERANCE
      the rows' CPU time (cgroup cpu_cores x the time since the previous
      row, summed) against cpu.stat usage_usec's growth over the same span,
      interpolated between the LOG reads around the first and last row
      that have some; fails above TOLERANCE (relative)
  rows.py rate ROWS_FILE FIELD WANT TOLERANCE
      the rate the rows give from the first to the last (usage.FIELD times
      the time since the previous row is that span's count) against WANT,
      the workload's own; fails off by more than TOLERANCE (relative) or
      when a row lacks the field.  The first row only starts the span: a
      process's first row stands for one poll interval, while its counts
      are all the probe had (more, when polls run late)
  rows.py framework COUNT TIMEOUT_S
      starts COUNT short processes, one after another, each reaped at
      once: /bin/true -m pyspark.daemon, whose argv the built-in catalog's
      spark entry matches (cmdline pyspark); waits until each has its last
      row; fails unless some are between_polls rows (born and gone between
      two polls: the framework comes from the argv the probe kept at the
      exec) and every between_polls row of them says spark
"""
import json
import os
import statistics
import sys
import time

DATASET = "/var/lib/croft/croft-dataset.jsonl"
READ_WINDOW_MS = 1000  # the poll's reads of one cgroup fall within its unix_ms +- this
LOG_INTERVAL_S = 0.05
BRACKET_MS = 250  # reads further apart than this (the VM stalled) say nothing of between


def dataset_rows():
    """The live dataset's whole rows, none while it is not there yet."""
    try:
        with open(DATASET, encoding="utf-8") as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue  # a line being appended
    except FileNotFoundError:
        return


def rows_of(cgroup, since_ms):
    return [row for row in dataset_rows()
            if row.get("process", {}).get("cgroup") == cgroup and
            row["unix_ms"] >= since_ms and "cgroup_usage" in row]


def wait(cgroup, count, timeout_s, since_ms):
    deadline = time.monotonic() + timeout_s
    while True:
        rows = rows_of(cgroup, since_ms)
        if len(rows) >= count or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for row in rows:
        print(json.dumps(row))
    return 0 if len(rows) >= count else 1


def cg_usage(mem_dir, cpu_dir):
    """(memory bytes, CPU usec) of the cgroup, v2's files or v1's."""
    try:
        with open(f"{mem_dir}/memory.current") as f:
            mem = int(f.read())
        with open(f"{cpu_dir}/cpu.stat") as f:
            return mem, int(f.readline().split()[1])  # usage_usec comes first
    except FileNotFoundError:
        with open(f"{mem_dir}/memory.usage_in_bytes") as f:
            mem = int(f.read())
        with open(f"{cpu_dir}/cpuacct.usage") as f:
            return mem, int(f.read()) // 1000


def cglog(mem_dir, cpu_dir, log):
    with open(log, "w", buffering=1) as out:
        while True:
            try:
                mem, usage = cg_usage(mem_dir, cpu_dir)
            except (OSError, ValueError, IndexError):
                return 0
            out.write(f"{int(time.time() * 1000)} {mem} {usage}\n")
            time.sleep(LOG_INTERVAL_S)


def read_log(log):
    reads = []
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                reads.append(tuple(int(p) for p in parts))
    return reads


def load_rows(rows_file):
    with open(rows_file) as f:
        return [json.loads(line) for line in f]


def memfit(rows_file, log, tolerance):
    reads = [(t, m) for t, m, _ in read_log(log)]
    worst = None
    for row in load_rows(rows_file):
        got = row["cgroup_usage"].get("memory_bytes")
        near = [b for t, b in reads if abs(t - row["unix_ms"]) <= READ_WINDOW_MS]
        if got is None or not near:
            print(f"row at {row['unix_ms']}: memory_bytes {got}, {len(near)} reads near it")
            return 1
        # zero when the row's figure lies within what the cgroup file
        # showed around that poll
        diff = max(min(near) - got, got - max(near), 0)
        print(f"row at {row['unix_ms']}: memory_bytes {got}, memory.current "
              f"{min(near)}..{max(near)} ({len(near)} reads), off by {diff}")
        worst = diff if worst is None else max(worst, diff)
    print(f"worst {worst} bytes off (tolerance {tolerance})")
    return 0 if worst <= tolerance else 1


def usage_at(reads, ms):
    """cpu.stat usage_usec at ms, between the two reads around it (at most
    BRACKET_MS apart), or None."""
    for (t0, _, u0), (t1, _, u1) in zip(reads, reads[1:]):
        if t0 <= ms <= t1:
            if t1 - t0 > BRACKET_MS:
                return None
            return u0 + (u1 - u0) * (ms - t0) / max(t1 - t0, 1)
    return None


def cpufit(rows_file, log, tolerance):
    reads = read_log(log)
    rows = [r for r in load_rows(rows_file) if usage_at(reads, r["unix_ms"]) is not None]
    if len(rows) < 4:
        print(f"{len(rows)} rows between reads of the test's log")
        return 1
    croft_s = sum(r["cgroup_usage"]["cpu_cores"] * (r["unix_ms"] - p["unix_ms"]) / 1000
                  for p, r in zip(rows, rows[1:]))
    kernel_s = (usage_at(reads, rows[-1]["unix_ms"]) - usage_at(reads, rows[0]["unix_ms"])) / 1e6
    span_s = (rows[-1]["unix_ms"] - rows[0]["unix_ms"]) / 1000
    off = abs(croft_s - kernel_s) / kernel_s
    print(f"over {span_s:.1f} s ({len(rows)} rows): croft {croft_s:.3f} CPU-s, cpu.stat "
          f"{kernel_s:.3f} CPU-s ({kernel_s / span_s:.3f} cores), off by {off:.1%} "
          f"(tolerance {tolerance:.0%})")
    return 0 if off <= tolerance else 1


def rate(rows_file, field, want, tolerance):
    rows = sorted(load_rows(rows_file), key=lambda r: r["unix_ms"])
    got = [r["usage"].get(field) for r in rows[1:]]
    print(f"usage.{field} of the rows after the first: {got}")
    if not got or None in got:
        return 1
    count = sum(r["usage"][field] * (r["unix_ms"] - p["unix_ms"]) / 1000
                for p, r in zip(rows, rows[1:]))
    span_s = (rows[-1]["unix_ms"] - rows[0]["unix_ms"]) / 1000
    off = abs(count / span_s - want) / want
    print(f"over {span_s:.1f} s: {count:.0f}, {count / span_s:.0f} a second, want {want:.0f}: "
          f"off by {off:.1%} (tolerance {tolerance:.0%})")
    return 0 if off <= tolerance else 1


def last_rows(starts):
    """The last row of each process of starts ({tgid: start_ms}, start within 1 s)."""
    out = {}
    for row in dataset_rows():
        start = starts.get(row["tgid"])
        if (start is not None and "exited" in row and
                abs(row["process"].get("start_ms", 0) - start) < 1000):
            out[row["tgid"]] = row
    return out


def framework(count, timeout_s):
    argv = ["/bin/true", "-m", "pyspark.daemon"]
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    boot_ms = (time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)) * 1000
    starts = {}
    for _ in range(count):
        pid = os.posix_spawn(argv[0], argv, {})
        with open(f"/proc/{pid}/stat") as f:  # a zombie until the wait
            starts[pid] = boot_ms + int(f.read().rsplit(")", 1)[1].split()[19]) * tick_ms
        os.waitpid(pid, 0)
    deadline = time.monotonic() + timeout_s
    while len(rows := last_rows(starts)) < count and time.monotonic() < deadline:
        time.sleep(0.5)
    between = [r for r in rows.values() if r["exited"] == "between_polls"]
    said = sorted({str(r["process"].get("framework")) for r in between})
    print(f"{len(rows)} of {count} last rows, {len(between)} between_polls; their framework: "
          f"{said}")
    return 0 if len(rows) == count and between and said == ["spark"] else 1


def main(argv):
    if len(argv) >= 5 and argv[1] == "wait":
        since = int(argv[6]) if len(argv) == 7 and argv[5] == "--since" else 0
        return wait(argv[2], int(argv[3]), float(argv[4]), since)
    if len(argv) == 5 and argv[1] == "cglog":
        return cglog(argv[2], argv[3], argv[4])
    if len(argv) == 5 and argv[1] == "memfit":
        return memfit(argv[2], argv[3], int(argv[4]))
    if len(argv) == 5 and argv[1] == "cpufit":
        return cpufit(argv[2], argv[3], float(argv[4]))
    if len(argv) == 6 and argv[1] == "rate":
        return rate(argv[2], argv[3], float(argv[4]), float(argv[5]))
    if len(argv) == 4 and argv[1] == "framework":
        return framework(int(argv[2]), float(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
