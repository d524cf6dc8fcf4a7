#!/usr/bin/env python3
"""Lists C++ functions longer than N lines (default 150) in ringside's product code.

Usage: scripts/long-functions.py [--max N] [--all] [PATH...]
  PATH     files or folders to scan (default: the repository, without tests/, tools/perf/, fuzz/,
           build*/ and third-party folders)
  --max N  report functions with more than N lines (default 150)
  --all    scan tests/, tools/perf/ and fuzz/ too
Exit status: 0 none over N, 1 some listed, 2 bad usage.

A heuristic, not a parser: comments, string and character literals (raw strings included) are
blanked, then every '{' whose preceding text ends in ')' (optionally followed by const,
noexcept, override, final, mutable, an initializer list, a trailing return type or '-> T') is a
function body, unless the text before the '(' is a control keyword (if, for, while, switch,
catch). Limits: a lambda is counted as its own function and also inside its enclosing one;
macros that open braces, and functions whose signature is split by the preprocessor, may be
missed or misnamed; a constructor's initializer list with braces ({}) is treated as part of the
signature only when it ends in ')' or '}' before the body's '{'.
"""
import os
import re
import signal
import sys

SKIP_DIRS = {"tests", "perf", "fuzz", ".git", "third_party", "external"}  # perf: tools/perf
EXTS = (".cpp", ".cc", ".h", ".hpp")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof"}


def blank(text):
    """Comments and literals replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i and (text[i - 1].isalnum()):  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


SIG_TAIL = re.compile(
    r"\)\s*(?:const|noexcept(?:\([^()]*\))?|override|final|mutable|&&|&|\s)*"
    r"(?:->\s*[\w:<>,\s*&]+)?\s*(?::[^;{}]*(?:\{[^{}]*\}[^;{}]*)*)?$", re.S)


def name_before(text, brace):
    """The function's name when the '{' at `brace` opens a function body, else None."""
    head = text[max(0, brace - 2000):brace]
    # Cut a constructor's initializer list: the last ')' closing the parameter list.
    m = SIG_TAIL.search(head)
    if not m:
        return None
    close = m.start()
    depth = 0
    k = close
    while k >= 0:
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    if k < 0:
        return None
    name = re.search(r"([\w:~<>=!+\-*/\[\]]+)\s*$", head[:k])
    if not name:
        return None
    word = name.group(1)
    if word.split("::")[-1] in CONTROL or word in ("]", "[]"):
        return None
    if word.endswith("]"):
        return "lambda"
    return word


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    stack = []  # (brace offset, name or None)
    for i, c in enumerate(text):
        if c == "{":
            stack.append((i, name_before(text, i)))
        elif c == "}" and stack:
            start, name = stack.pop()
            if name:
                first = text.count("\n", 0, start) + 1
                last = text.count("\n", 0, i) + 1
                yield name, first, last - first + 1


def files(paths, all_dirs):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, names in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("build") and
                             (all_dirs or d not in SKIP_DIRS) and d != ".git")
            for n in sorted(names):
                if n.endswith(EXTS):
                    yield os.path.join(root, n)


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    limit, all_dirs, paths = 150, False, []
    it = iter(argv)
    for a in it:
        if a == "--max":
            try:
                limit = int(next(it))
            except (StopIteration, ValueError):
                print("long-functions: --max takes a number of lines", file=sys.stderr)
                return 2
        elif a == "--all":
            all_dirs = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif not os.path.exists(a):
            print(f"long-functions: {a}: no such file or folder", file=sys.stderr)
            return 2
        else:
            paths.append(a)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not paths:
        paths = [root]
    found = []
    for path in files(paths, all_dirs):
        for name, line, length in functions(path):
            if length > limit and name != "lambda":
                found.append((length, os.path.relpath(path, root), line, name))
    for length, path, line, name in sorted(found, reverse=True):
        print(f"{length:5d}  {path}:{line}  {name}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
