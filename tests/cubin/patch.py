# SPDX-License-Identifier: MIT
"""patch.py IN OUT OLD NEW: copy the cubin IN to OUT with the first
OLD replaced by NEW, of the same length (a kernel name or a .target in
its .nv_debug_ptx_txt), to make PTX that is not the cubin's own."""
import sys

src, dst, old, new = sys.argv[1:5]
old, new = old.encode(), new.encode()
assert len(old) == len(new), "OLD and NEW differ in length"
d = bytearray(open(src, 'rb').read())
i = d.find(old)
assert i >= 0, "OLD not found"
d[i:i + len(old)] = new
open(dst, 'wb').write(d)
