#!/usr/bin/env python3
# test-wire.py: the Python tests' copy of the wire (tests/lib/wire.py) held
# to the C headers, as wire-facts (built from them) prints them: every
# number the same, every layout the same size with its items where the C
# fields are.  Test process, any user.  test-wire.py WIRE_FACTS
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import wire  # noqa: E402

PYTHON_NAME = {'CROFT_PROTO_VERSION': 'VERSION'}  # the rest keep their C names


def items(layout):
    """(offset, size) of each item of a struct format ('16s': one item)."""
    out, offset = [], 0
    for count, code in re.findall(r'(\d*)([a-zA-Z?])', layout.format.lstrip('<')):
        count = int(count or 1)
        if code == 's':
            out.append((offset, count))
            offset += count
            continue
        size = struct.calcsize('<' + code)
        out += [(offset + i * size, size) for i in range(count)]
        offset += count * size
    return out


def main():
    facts = json.loads(subprocess.run([sys.argv[1]], check=True, capture_output=True,
                                      text=True).stdout)
    checks = []
    for name, value in facts['numbers'].items():
        if name == 'PROBE_DROP_REASONS':
            checks.append((len(wire.DROPS) == value, 'DROPS: %d names, enum probe_drop %d'
                           % (len(wire.DROPS), value)))
            continue
        py = PYTHON_NAME.get(name, name)
        checks.append((getattr(wire, py, None) == value,
                       '%s: %s in wire.py, %d in C' % (py, getattr(wire, py, None), value)))
    structs = {}
    for f in facts['fields']:
        s = structs.setdefault(f['struct'], {'size': f['struct_size'], 'items': []})
        s['items'] += [(f['offset'] + i * f['size'], f['size']) for i in range(f['count'])]
    for name, s in structs.items():
        layout = wire.LAYOUTS.get(name)
        checks.append((layout is not None, '%s: a layout in wire.py' % name))
        if layout is None:
            continue
        checks.append((layout.size == s['size'] and items(layout) == s['items'],
                       '%s: %r is %d bytes, items %s; C: %d bytes, fields %s'
                       % (name, layout.format, layout.size, items(layout), s['size'],
                          s['items'])))
    extra = set(wire.LAYOUTS) - set(structs)
    checks.append((not extra, 'layouts C has no struct of: %s' % sorted(extra)))
    print('1..%d' % len(checks))
    for i, (ok, what) in enumerate(checks, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == '__main__':
    sys.exit(main())
