#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: a --timeline file opens in a real viewer.  The fake
# driver's run (as in timeline.sh) is loaded into speedscope (the npm
# package, fetched once into build/speedscope), served from 127.0.0.1,
# in headless Chromium.  The rendered page must name the program's
# thread track and show two tracks (the thread and GPU 0's stream 7),
# and its flame chart must hold the nine launch slices as coloured
# bars (pixels of the screenshot, kept as
# build/test-artefacts/timeline_speedscope.png); an empty or broken
# page has neither.  Skipped, with the reason, without chromium, npm or
# the package.
. tests/progs/agent_lib.sh

command -v chromium >/dev/null || { echo "no chromium (Debian's chromium package)"; exit 77; }
command -v python3 >/dev/null || { echo "no python3 to serve the page"; exit 77; }
SS=build/speedscope/package/dist/release
if [ ! -f "$SS/index.html" ]; then
	command -v npm >/dev/null || { echo "no npm to fetch speedscope"; exit 77; }
	mkdir -p build/speedscope
	(cd build/speedscope && npm pack --silent speedscope@1.25.0 >/dev/null 2>&1 &&
		tar xzf speedscope-1.25.0.tgz) ||
		{ echo "speedscope could not be fetched from npm"; exit 77; }
fi
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
$CC $W -shared -fPIC -I"$CUDA_INC" -Wl,-soname,libcupti.so.13 \
	tests/accept/agent_fakecupti.c -o "$T/libcupti.so.13" -lpthread ||
	fail "building the fake libcupti"

LD_LIBRARY_PATH=$T HOOKPROG_GRAPH=1 GPUTRACE_AGENT_LIB=$AGENT \
	timeout -k 2 30 "$GT" -q --timeline "$T/tl.json" \
	-c "$T/prog $T/vadd.fatbin $VADD $GLOBAL" >"$T/out" 2>"$T/err" </dev/null ||
	{ cat "$T/err"; fail "gputrace --timeline -c failed"; }

# the viewer and the file from one loopback server
mkdir -p "$T/www"
cp -r "$SS"/. "$T/www/"
cp "$T/tl.json" "$T/www/tl.json"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$T/www" && exec timeout 120 python3 -m http.server "$port" --bind 127.0.0.1) \
	>/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$T"' EXIT
i=0
until python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/tl.json')" \
	2>/dev/null || [ $i -ge 50 ]; do
	sleep 0.1; i=$((i + 1))
done
url="http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/tl.json"
browse() {	# ARGS: one headless Chromium run on the page
	timeout -k 5 60 chromium --headless --no-sandbox --disable-gpu \
		--user-data-dir="$T/chrome" --window-size=1280,800 \
		--virtual-time-budget=5000 "$@" "$url" 2>/dev/null
}
browse --dump-dom >"$T/dom.html"
grep -q 'prog (pid [0-9]*), prog (tid [0-9]*)' "$T/dom.html" ||
	fail "the page does not name the program's thread track"
grep -q '(1/2)' "$T/dom.html" || fail "the page does not show two tracks"
(cd "$T" && browse --screenshot="$T/shot.png" >/dev/null)
[ -s "$T/shot.png" ] || fail "no screenshot"
mkdir -p build/test-artefacts
cp "$T/shot.png" build/test-artefacts/timeline_speedscope.png

# the flame chart's first row (y 40-110): nine separate coloured bars
python3 - "$T/shot.png" <<'PY' || fail "the flame chart does not show the nine launches"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
def coloured(px):  # not white, grey or black: a slice's fill
    r, g, b = px[:3]
    return max(r, g, b) - min(r, g, b) > 24
bars = 0
for y in (60, 80, 100):
    row, run = rows[y], 0
    inbar = False
    for x in range(w):
        c = coloured(row[x * bpp:x * bpp + 3])
        if c and not inbar:
            run += 1
        inbar = c
    bars = max(bars, run)
print("bars", bars)
assert bars >= 9, bars
PY
exit 0
