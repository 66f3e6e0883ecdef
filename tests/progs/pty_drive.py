#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drive an interactive program through a pseudo-terminal, expect-style.

    pty_drive.py [-t SECONDS] [-l LOG] -- CMD ARGS... < STEPS

STEPS, one a line (blank lines and lines starting with # are skipped):
    send TEXT       type TEXT and Enter
    type TEXT       type TEXT, no Enter
    key NAME        one key: C-c, C-d, tab, enter
    expect REGEX    wait until the output since the last match matches
                    (Python re, DOTALL); fail after the timeout
    absent SECS REGEX  read for SECS seconds: fail if REGEX shows up
    sleep SECS
    shell CMD       run CMD with sh (e.g. pause the target); fail if it fails
    exit STATUS     wait for CMD to end and compare its exit status
Exit status 0 when every step passed; else 1, with the step and the
output seen since the last match on stderr.  The whole transcript goes
to LOG when given.
"""
import os
import pty
import re
import select
import sys
import time


def main():
    args = sys.argv[1:]
    timeout, log = 10.0, None
    while args and args[0] != "--":
        if args[0] == "-t":
            timeout = float(args[1])
            args = args[2:]
        elif args[0] == "-l":
            log = args[1]
            args = args[2:]
        else:
            sys.exit("pty_drive: unknown option " + args[0])
    cmd = args[1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    seen = b""
    transcript = []
    status = None

    def read(secs):
        nonlocal seen, status
        end = time.time() + secs
        while True:
            left = end - time.time()
            if left <= 0:
                return
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                return
            seen += data
            transcript.append(data)
            return

    def fail(step):
        sys.stderr.write("pty_drive: failed at: %s\n--- output since the "
                         "last match ---\n%s\n---\n" %
                         (step, seen.decode("utf-8", "replace")))
        finish()
        sys.exit(1)

    def finish():
        if log:
            with open(log, "wb") as f:
                f.write(b"".join(transcript))

    keys = {"C-c": b"\x03", "C-d": b"\x04", "tab": b"\t", "enter": b"\r"}
    for raw in sys.stdin.read().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        op, _, arg = raw.partition(" ")
        if op == "send":
            os.write(fd, arg.encode() + b"\r")
        elif op == "type":
            os.write(fd, arg.encode())
        elif op == "key":
            os.write(fd, keys[arg])
        elif op == "expect":
            rx = re.compile(arg.encode(), re.S)
            end = time.time() + timeout
            while True:
                m = rx.search(seen)
                if m:
                    seen = seen[m.end():]
                    break
                if time.time() >= end:
                    fail(raw)
                read(min(0.2, end - time.time()))
        elif op == "absent":
            secs, _, rx = arg.partition(" ")
            end = time.time() + float(secs)
            while time.time() < end:
                read(end - time.time())
            if re.search(rx.encode(), seen, re.S):
                fail(raw)
        elif op == "shell":
            if os.system(arg) != 0:
                fail(raw)
        elif op == "sleep":
            end = time.time() + float(arg)
            while time.time() < end:
                read(end - time.time())
        elif op == "exit":
            end = time.time() + timeout
            while status is None and time.time() < end:
                read(0.2)
                p, st = os.waitpid(pid, os.WNOHANG)
                if p == pid:
                    status = os.waitstatus_to_exitcode(st)
            if status is None:
                fail(raw + " (still running)")
            if status != int(arg):
                fail("%s (status %d)" % (raw, status))
        else:
            sys.exit("pty_drive: unknown step " + raw)
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    finish()


if __name__ == "__main__":
    main()
