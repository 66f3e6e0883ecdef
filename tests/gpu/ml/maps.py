# SPDX-License-Identifier: MIT
"""Read gputrace -f json output: `maps.py FILE MAP` prints each entry of
MAP as KEY<TAB>VALUE (a keyless map: its value), the last print of it."""
import json
import sys


def main():
    want, last = sys.argv[2], None
    with open(sys.argv[1]) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("type") == "map" and want in ev.get("data", {}):
                last = ev["data"][want]
    if isinstance(last, dict):
        for k, v in last.items():
            print(f"{k}\t{v}")
    elif last is not None:
        print(last)


if __name__ == "__main__":
    main()
