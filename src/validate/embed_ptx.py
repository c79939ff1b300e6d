#!/usr/bin/env python3
# embed_ptx.py IN.ptx OUT.c: kernels.ptx as the C string validate_kernels_ptx (meson runs it at build time).
import sys

text = open(sys.argv[1]).read()
out = ['/* generated from kernels.ptx by embed_ptx.py */', 'const char validate_kernels_ptx[] =']
for line in text.splitlines():
    out.append('"' + line.replace('\\', '\\\\').replace('"', '\\"') + '\\n"')
out.append(';')
open(sys.argv[2], 'w').write('\n'.join(out) + '\n')
