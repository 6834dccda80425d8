#!/usr/bin/env python3
"""A checker's report on stdin reduced to its shape on stdout, line for
line: blank, "state" or "ask WORD ANSWER", then the numbers the line
names, in order. pfsck words its messages itself; its report and
e2fsck's agree in shape when they find, ask and count the same things.
The same reduction as tests/suite/common's report_shape."""
import re
import sys

RENAMED = {"Clone multiply-claimed blocks": "Copy the shared blocks"}

for line in sys.stdin.read().splitlines():
    if not line.strip():
        print()
        continue
    # Numbers standing alone: not the digits of a word (e2fsck, ext4).
    numbers = " ".join(re.findall(r"(?<![A-Za-z0-9])[0-9]+(?![A-Za-z0-9])", line))
    for answer in ("no", "yes"):
        if line.endswith("? " + answer):
            word = line[: -len(answer) - 2].rsplit(". ", 1)[-1].rsplit(": ", 1)[-1].strip()
            print("ask %s %s %s" % (RENAMED.get(word, word), answer, numbers))
            break
    else:
        print("state " + numbers)
