#!/bin/sh
# SPDX-License-Identifier: MIT
# Acceptance: no request stalls or crashes the tracer behind --metrics:
# other paths get 404, other methods 405 (with Allow), HEAD no body; a
# client that never finishes its request, more idle connections than
# the limit and malformed requests (garbage, a 100 KB header, a 40 KB
# path, a bad chunk, a huge body) do not keep another client from its
# page for longer than the connection timeout; 10000 requests in a row
# are all answered;
# through it all the program's interval probe keeps running and its
# exit dump comes at SIGINT.  Addresses: 0.0.0.0 and :: are refused
# without --metrics-any, malformed ones and a port in use are errors.
# Exit 0 pass, 1 fail (saying why), 77 skip.

. "$(dirname "$0")/../progs/metrics_lib.sh"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }

# code PORT ARGS...: the HTTP status curl got
code() {
	p=$1
	shift
	curl -s -m 5 -o /dev/null -w '%{http_code}' "$@" "http://127.0.0.1:$p/metrics"
}

# refused SPEC: gputrace says why and exits 1 before running anything
refused() {
	timeout -k 5 20 "$GT" --metrics "$1" -e 'BEGIN { printf("ran\n"); exit(); }' \
		</dev/null >"$MDIR/r.out" 2>"$MDIR/r.err"
	rc=$?
	if [ $rc -ne 1 ] || grep -q ran "$MDIR/r.out" || ! grep -q "$2" "$MDIR/r.err"; then
		echo "--metrics $1: exit $rc, want 1 and '$2'; got:"
		cat "$MDIR/r.out" "$MDIR/r.err"
		exit 1
	fi
}

refused 0.0.0.0:9 'add --metrics-any'
refused '[::]:9' 'add --metrics-any'
refused 'nine' 'is not PORT'
refused '127.0.0.1:65536' 'is not PORT'
refused '::1:9' 'is not PORT'
timeout -k 5 20 "$GT" --metrics-any --metrics 0.0.0.0:9 --dry-run \
	-e 'BEGIN { exit(); }' </dev/null >"$MDIR/any" 2>&1 ||
	{ echo "--metrics-any did not allow 0.0.0.0:"; cat "$MDIR/any"; exit 1; }

metrics_start robust -e 'interval:ms:100 { @ticks = count(); }'
p=$MPORT
refused "127.0.0.1:$p" 'Address already in use'

c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/nope")
[ "$c" = 404 ] || { echo "GET /nope: $c, want 404"; exit 1; }
c=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/")
[ "$c" = 404 ] || { echo "GET /: $c, want 404"; exit 1; }
for m in POST PUT DELETE OPTIONS; do
	c=$(code "$p" -X $m -d x=1)
	[ "$c" = 405 ] || { echo "$m: $c, want 405"; exit 1; }
done
curl -s -m 5 -i -X POST "http://127.0.0.1:$p/metrics" | grep -qi '^Allow: GET, HEAD' ||
	{ echo "405 without Allow: GET, HEAD"; exit 1; }
n=$(curl -s -m 5 -I "http://127.0.0.1:$p/metrics" | grep -ci '^content-type: text/plain; version=0.0.4')
[ "$n" = 1 ] || { echo "HEAD: no text format content type"; exit 1; }

# a client stuck in its headers, then 100 idle connections (the limit
# is 64, the timeout 5 s) and malformed requests: the page still comes,
# within 12 s
python3 - "$p" <<'PY' || exit 1
import socket, sys, threading, time, urllib.request
port = int(sys.argv[1])
url = "http://127.0.0.1:%d/metrics" % port
slow = socket.create_connection(("127.0.0.1", port))
slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
t = time.time()
body = urllib.request.urlopen(url, timeout=5).read()
if b"gputrace_ticks_total" not in body:
    sys.exit("no page while a client is stuck in its request")
# malformed requests at the same time: whatever libmicrohttpd answers
# (400, 414, 431 or a close), the tracer goes on
bad = [b"\x00\xff garbage\r\n\r\n",
       b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n",
       b"GET " + b"/a" * 20000 + b" HTTP/1.1\r\n\r\n",
       b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       b"POST /metrics HTTP/1.1\r\nContent-Length: 100000000\r\n\r\nabc"]
def send_bad(data):
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(12)
        s.sendall(data)
        s.recv(100)
        s.close()
    except OSError:
        pass
threads = [threading.Thread(target=send_bad, args=(d,)) for d in bad]
for th in threads:
    th.start()
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
t = time.time()
body = urllib.request.urlopen(url, timeout=12).read()
if b"gputrace_ticks_total" not in body:
    sys.exit("no page with 100 idle connections")
print("page with 100 idle connections after %.1f s" % (time.time() - t))
for th in threads:
    th.join()
PY

# 10000 requests, each answered 200
i=0
while [ $i -lt 10000 ]; do
	echo "url = \"http://127.0.0.1:$p/metrics\""
	echo 'output = /dev/null'
	i=$((i + 1))
done >"$MDIR/urls"
ok=$(timeout -k 5 90 curl -s -m 5 -K "$MDIR/urls" -w '%{http_code}\n' | grep -c '^200$')
[ "$ok" = 10000 ] || { echo "$ok of 10000 requests got 200"; exit 1; }

# the probe still runs, and SIGINT still ends it with its exit dump
t1=$(metrics_get "$p" | sed -n 's/^gputrace_ticks_total //p')
sleep 0.5
t2=$(metrics_get "$p" | sed -n 's/^gputrace_ticks_total //p')
[ -n "$t2" ] && [ "${t1:-0}" -lt "$t2" ] ||
	{ echo "@ticks stopped after the requests: $t1 then $t2"; exit 1; }
metrics_end "$MPID" robust
grep -q '^@ticks: [0-9][0-9]*$' "$MDIR/robust.out" ||
	{ echo "no exit dump:"; cat "$MDIR/robust.out"; exit 1; }
exit 0
