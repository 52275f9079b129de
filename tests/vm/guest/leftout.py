#!/usr/bin/python3
"""leftout.py: the three places that say which row fields a daemon
(croft-probe, croft-sampler) leaves out must agree: its status (left_out),
its man page (FIELDS LEFT OUT) and docs/kernels.md's table by kernel.  Run in the
VM by checks.sh for the booted kernel and on the host by tests/probe and
tests/sampler (root or not; reads files only).

  leftout.py STATUS_JSON KERNELS_MD MAN COLUMN
      STATUS_JSON: the daemon's status figures (a file, "-" for stdin);
      MAN: its man page's source (man/croft-probe.8.scd, croft-sampler.8.scd);
      COLUMN: docs/kernels.md's column of this kernel, by its header's
      start ("5.10", "6.1", "6.1 cgroup v1", "6.12", "7.2", "6.18").
      Fails, naming the difference, when the fields status leaves out are
      not exactly the probe's fields (the man page's list) the column
      says "left out" for, or when one is not in the man page's list.
      The man pages' lists are the daemons' own: the column's "left out"
      cells are taken for the fields of MAN's list only.
"""
import json
import re
import sys

TABLE_TITLE = "## Where each figure comes from, by kernel"
MAN_SECTION = "# FIELDS LEFT OUT"


def readme_table(readme):
    """The by-kernel table: (headers, rows), each row its cells."""
    text = open(readme, encoding="utf-8").read()
    at = text.index(TABLE_TITLE)
    lines = [ln for ln in text[at:].splitlines() if ln.startswith("|")]
    end = next((i for i, ln in enumerate(lines) if i and not ln.startswith("|")), len(lines))
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[:end]]
    return cells[0], [r for r in cells[2:] if len(r) == len(cells[0])]


def fields_of(cell):
    """The backticked row field names of a table's first cell."""
    return re.findall(r"`([a-z0-9_.]+)`", cell)


def column_left_out(readme, column):
    headers, rows = readme_table(readme)
    matches = [i for i, h in enumerate(headers) if h.startswith(column + " (") or h == column]
    if len(matches) != 1:
        raise SystemExit(f"kernels.md: no single column for {column!r} in {headers}")
    col = matches[0]
    out = set()
    for row in rows:
        if row[col].lower().startswith("left out"):
            out |= set(fields_of(row[0]))
    return out, {f for row in rows for f in fields_of(row[0])}


def man_fields(man):
    text = open(man, encoding="utf-8").read()
    section = text[text.index(MAN_SECTION):]
    section = section[:section.index("\n# ", 1)]
    return set(re.findall(r"^\*([a-z0-9_.]+)\*", section, re.M)) | set(
        re.findall(r", \*([a-z0-9_.]+)\*", section))


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    src = sys.stdin if argv[1] == "-" else open(argv[1], encoding="utf-8")
    status = set(json.load(src).get("left_out", {}))
    readme_out, readme_all = column_left_out(argv[2], argv[4])
    man = man_fields(argv[3])
    print(f"status left_out: {sorted(status) or 'none'}")
    print(f"kernels.md column {argv[4]!r} left out: {sorted(readme_out) or 'none'}")
    print(f"{argv[3]} FIELDS LEFT OUT: {sorted(man)}")
    # the table's other "left out" cells are the other daemon's
    readme_out &= man
    bad = []
    if status != readme_out:
        bad.append(f"status and kernels.md differ: {sorted(status ^ readme_out)}")
    if not status <= man:
        bad.append(f"not in the man page: {sorted(status - man)}")
    if not man <= readme_all:
        bad.append(f"man page fields the kernels.md table lacks: {sorted(man - readme_all)}")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
