#!/usr/bin/env python3
"""Counts what issue 14 measures in src/, test modules left out.

- functions longer than 150 lines (from `fn` to its closing brace, blank
  and comment lines included; clippy's too_many_lines, which leaves those
  out, is the lint that enforces the limit);
- numeric `as` casts (`as u32`, `as usize`, ...);
- raw on-disk byte offsets outside src/fs/: constants holding a hex offset
  (`const S_STATE: usize = 0x3A`) and byte accessors called with a number
  (`le32(b, 0x28)`, `put_le16(b, 4, v)`).

    scripts/arch-stats.py [-v]
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "src")
CAST = re.compile(r"\bas\s+(u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|f32|f64)\b")
OFF_CONST = re.compile(r"const\s+[A-Z_0-9]+\s*:\s*usize\s*=\s*0x[0-9A-Fa-f]+\s*;")
OFF_CALL = re.compile(
    r"\b(le16|le32|le64|put_le16|put_le32|put_le64)\(\s*[^,()]+(\([^()]*\))?\s*,\s*(0x[0-9A-Fa-f]+|\d+)\b"
)
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)")


def strip_tests(lines):
    """The lines before a `#[cfg(test)]` module (kept at the end of files)."""
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and re.match(
            r"\s*(pub\s+)?mod\s+\w+", lines[i + 1]
        ):
            return lines[:i]
    return lines


def functions(lines):
    """(name, first line, length) of every fn with a body."""
    out = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth = 0
        opened = False
        j = i
        while j < len(lines):
            code = re.sub(r"//.*", "", lines[j])
            code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
            code = re.sub(r"'(\\.|[^'\\])'", "''", code)
            if not opened and ";" in code and "{" not in code:
                break
            depth += code.count("{") - code.count("}")
            opened |= "{" in code
            if opened and depth <= 0:
                out.append((m.group(5), i + 1, j - i + 1))
                break
            j += 1
        i += 1
    return out


def main():
    verbose = "-v" in sys.argv
    long_fns, casts, offsets = [], 0, []
    for root, _, files in os.walk(SRC):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, os.path.join(SRC, ".."))
            lines = strip_tests(open(path, encoding="utf-8").read().split("\n"))
            for name, at, n in functions(lines):
                if n > 150:
                    long_fns.append((n, f"{rel}:{at} {name}"))
            for k, line in enumerate(lines):
                code = re.sub(r"//.*", "", line)
                casts += len(CAST.findall(code))
                if rel.startswith("src/fs/"):
                    continue
                if OFF_CONST.search(code) or OFF_CALL.search(code):
                    offsets.append(f"{rel}:{k + 1}: {line.strip()}")
    print(f"functions over 150 lines: {len(long_fns)}")
    for n, where in sorted(long_fns, reverse=True):
        print(f"  {n:5} {where}")
    print(f"numeric as casts: {casts}")
    print(f"raw on-disk offsets outside src/fs/: {len(offsets)}")
    if verbose:
        for o in offsets:
            print(f"  {o}")


main()
