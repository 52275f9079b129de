#!/usr/bin/env python3
# embed.py: turns a file into a C string constant (build time only), so the
# built-in framework catalog lives inside the binaries.
# usage: embed.py INPUT OUTPUT SYMBOL
import sys

src, dst, sym = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, 'rb').read()
out = ['/* generated from %s by embed.py; do not edit */' % src.split('/')[-1],
       '#include <stddef.h>',
       'const char %s[] =' % sym]
for i in range(0, len(data), 64):
    chunk = data[i:i + 64]
    out.append('\t"' + ''.join('\\x%02x' % b for b in chunk) + '"')
if not data:
    out.append('\t""')
out[-1] += ';'
out.append('const size_t %s_len = %d;' % (sym, len(data)))
open(dst, 'w').write('\n'.join(out) + '\n')
