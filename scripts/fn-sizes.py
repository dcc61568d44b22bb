#!/usr/bin/env python3
"""The size rules of docs/code.md, counted: no function over MAX lines in the given folders
(SRC_MAX in the function crate's src/, for headroom as decisions are added),
and `plan()` (src/plan/mod.rs) within PLAN_MAX. A function's lines run from its `fn` line to its
closing brace, both included, found by matching braces outside comments, strings and chars.

    scripts/fn-sizes.py [--top N] [DIR...]     (default: src router/src)

Exits 1, naming each function at fault with its file and line, when a rule does not hold."""
import argparse
import pathlib
import re
import sys

MAX = 100
SRC_MAX = 80
PLAN_MAX = 80
PLAN_FILE = pathlib.Path("src/plan/mod.rs")

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_only(text):
    """The text with comments, strings and char literals blanked (newlines kept), so braces in
    them do not count and line numbers stay."""
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
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif raw := re.match(r'b?r(#*)"', text[i:]):
            if i and (text[i - 1].isalnum() or text[i - 1] == "_"):
                out.append(c)
                i += 1
                continue
            end = '"' + raw.group(1)
            j = text.find(end, i + raw.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}'), or a lifetime ('a), which has no closing quote.
            lit = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x..|.)|[^\\'])'", text[i:])
            if lit:
                out.append(blank(lit.group(0)))
                i += lit.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank(s):
    return "".join("\n" if ch == "\n" else " " for ch in s)


def functions(path):
    """(name, first line, lines) of every function with a body in the file."""
    code = code_only(path.read_text())
    found = []
    for m in FN.finditer(code):
        # The body opens at the first `{` before any `;` (a `;` first: a declaration in a trait).
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        depth, k = 0, j
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, k) + 1
        found.append((m.group(1), first, last - first + 1))
    return found


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--top", type=int, default=0, help="print the N longest functions")
    args.add_argument("dirs", nargs="*", default=["src", "router/src"])
    opts = args.parse_args()
    all_fns = []
    for d in opts.dirs:
        for path in sorted(pathlib.Path(d).rglob("*.rs")):
            all_fns += [(path, *f) for f in functions(path)]
    def limit(p):
        return SRC_MAX if p.parts[0] == "src" else MAX

    faults = [
        f"{p}:{line}: fn {name} is {size} lines, over {limit(p)}"
        for p, name, line, size in all_fns
        if size > limit(p)
    ]
    plans = [f for f in all_fns if f[0] == PLAN_FILE and f[1] == "plan"]
    if any(d in ("src", "src/") for d in opts.dirs):
        if not plans:
            faults.append(f"{PLAN_FILE}: no fn plan found")
        faults += [
            f"{p}:{line}: fn plan is {size} lines, over {PLAN_MAX}"
            for p, _, line, size in plans
            if size > PLAN_MAX
        ]
    for p, name, line, size in sorted(all_fns, key=lambda f: -f[3])[: opts.top]:
        print(f"{size:5} {p}:{line} {name}")
    longest = max(all_fns, key=lambda f: f[3])
    print(
        f"fn-sizes: {len(all_fns)} functions in {', '.join(opts.dirs)}; the longest is "
        f"{longest[1]} ({longest[0]}:{longest[2]}), {longest[3]} lines; plan() is "
        f"{plans[0][3] if plans else '?'} lines"
    )
    for f in faults:
        print(f, file=sys.stderr)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
