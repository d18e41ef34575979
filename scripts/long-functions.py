#!/usr/bin/env python3
"""Lists the Rust functions longer than LIMIT lines under each FOLDER, and exits non-zero if
there is one.

Usage: scripts/long-functions.py LIMIT FOLDER...   (e.g. 150 crates/sim crates/pipeline)

A function's length is every line from its `fn` line to its closing brace, comments and
blank lines included (clippy's `too_many_lines` counts code lines only). Comments, strings
and character literals are blanked out first, so braces inside them do not count.
"""
import pathlib
import re
import sys

RAW_STRING = re.compile(r'(b?r)(#*)"')
CHAR = re.compile(r"'(\\.[^']*|[^\\'])'")


def blank(text):
    """`text` with every character but line breaks replaced by a space."""
    return re.sub(r"[^\n]", " ", text)


def strip(src):
    """`src` with comments, strings and character literals blanked out."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        word_before = i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")
        raw = None if word_before else RAW_STRING.match(src, i)
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif raw:
            end = '"' + raw.group(2)
            j = src.find(end, raw.end())
            j = n if j < 0 else j + len(end)
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
        elif c == "'" and CHAR.match(src, i):
            j = CHAR.match(src, i).end()
        else:
            out.append(c)
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    return "".join(out)


def long_functions(path, limit):
    """(line, name, length) of each function in `path` longer than `limit` lines."""
    text = strip(path.read_text())
    for m in re.finditer(r"\bfn\s+(\w+)", text):
        # The body opens at the first `{` before any `;` (a declaration has no body).
        j = m.end()
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j >= len(text) or text[j] == ";":
            continue
        depth = 0
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        start = text.count("\n", 0, m.start())
        length = text.count("\n", m.start(), j) + 1
        if length > limit:
            yield start + 1, m.group(1), length


def main():
    if len(sys.argv) < 3:
        sys.exit(next(l for l in __doc__.splitlines() if l.startswith("Usage")))
    limit, found = int(sys.argv[1]), 0
    for folder in sys.argv[2:]:
        paths = sorted(pathlib.Path(folder).rglob("*.rs"))
        if not paths:
            # A mistyped folder would otherwise pass with nothing checked.
            sys.exit(f"{folder}: no Rust files there; give folders of the repository")
        for path in paths:
            for line, name, length in long_functions(path, limit):
                found += 1
                print(f"{path}:{line}: fn {name} is {length} lines (limit {limit})")
    print(f"{found} function(s) over {limit} lines in {' '.join(sys.argv[2:])}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
