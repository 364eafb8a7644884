#!/usr/bin/env python3
"""Finds import circles in the workspace's crates: for every module, the graph among its
child modules (A -> B when code anywhere inside A names anything inside B, through
`crate::`, `super::` or `self::` paths) must have no cycle. Exit status 1 and one line per
circle when there is one.

    python3 tools/import-circles.py [CRATE_SRC ...]   (default: every crate of the workspace)

Test modules (`#[cfg(test)] mod tests`, files under tests/) are left out: a test may reach
anywhere.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+|::\{)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::([^;]*);", re.S)
MOD_DECL = re.compile(r"^\s*(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def strip_comments(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def strip_test_modules(text: str) -> str:
    """Drops `#[cfg(test)] mod x { ... }` blocks (brace matching)."""
    out, pos = [], 0
    for m in TEST_MOD.finditer(text):
        if m.start() < pos:
            continue
        out.append(text[pos:m.start()])
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        pos = i
    out.append(text[pos:])
    return "".join(out)


def modules(src: Path) -> dict:
    """Module path (tuple) -> its file, from the crate root's `mod x;` declarations."""
    found = {}

    def visit(path: tuple, file: Path):
        found[path] = file
        text = strip_test_modules(strip_comments(file.read_text()))
        here = file.parent if file.name in ("lib.rs", "main.rs", "mod.rs") else file.with_suffix("")
        for test, name in MOD_DECL.findall(text):
            if test:
                continue
            for child in (here / f"{name}.rs", here / name / "mod.rs"):
                if child.exists():
                    visit(path + (name,), child)
                    break

    for root in ("lib.rs", "main.rs"):
        if (src / root).exists():
            visit((), src / root)
    return found


def expand_group(prefix: str, body: str) -> list:
    """`use crate::{a::b, c::{d, e}}` -> ["crate::a::b", "crate::c::d", "crate::c::e"]."""
    body = body.strip()
    if not body.startswith("{"):
        return [f"{prefix}::{body}"]
    inner, depth, start, parts = body[1:-1], 0, 0, []
    for i, ch in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    out = []
    for p in (p.strip() for p in parts if p.strip()):
        head, _, rest = p.partition("::")
        if rest.startswith("{"):
            out.extend(expand_group(f"{prefix}::{head}", rest))
        else:
            out.append(f"{prefix}::{p}")
    return out


def references(text: str) -> list:
    refs = []
    for kind, body in USE_GROUP.findall(text):
        refs.extend(expand_group(kind, body))
    text = USE_GROUP.sub("", text)
    refs.extend(m.group(0) for m in PATH.finditer(text))
    return refs


def resolve(ref: str, at: tuple, known: dict, is_dir: bool) -> tuple | None:
    """The module a path names (its longest known prefix), from module `at`."""
    parts = [p.split(" as ")[0].strip() for p in ref.replace("{", "").split("::")]
    head, rest = parts[0], [p for p in parts[1:] if p and p != "*"]
    if head == "crate":
        base = ()
    elif head == "self":
        base = at
    else:  # super
        base = at[:-1]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    path = base
    for p in rest:
        if path + (p,) in known:
            path = path + (p,)
        else:
            break
    return path


def circles(src: Path) -> list:
    mods = modules(src)
    edges = {}
    for path, file in mods.items():
        text = strip_test_modules(strip_comments(file.read_text()))
        for ref in references(text):
            target = resolve(ref, path, mods, file.name == "mod.rs")
            if target is None or target == path:
                continue
            # The edge between the children of their deepest common module.
            common = 0
            while common < min(len(path), len(target)) and path[common] == target[common]:
                common += 1
            if common >= len(path) or common >= len(target):
                continue  # a module and its own ancestor or descendant
            parent = path[:common]
            edges.setdefault(parent, {}).setdefault(path[common], {}).setdefault(target[common], []).append(
                (path, ref))
    found = []
    for parent, graph in edges.items():
        for cycle in find_cycles(graph):
            where = "::".join(parent) or "crate"
            why = []
            for a, b in zip(cycle, cycle[1:] + cycle[:1]):
                frm, ref = graph[a][b][0]
                why.append(f"{a} -> {b} ({'::'.join(frm)}: {ref})")
            found.append(f"{src.parent.name}: in {where}: " + "; ".join(why))
    return found


def find_cycles(graph: dict) -> list:
    """One cycle per strongly connected component of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(cycle_in(graph, set(comp)))

    for v in list(graph):
        if v not in index:
            strong(v)
    return out


def cycle_in(graph: dict, comp: set) -> list:
    """A simple cycle through the component's smallest node."""
    start = min(comp)
    path, seen = [start], {start}

    def walk(v):
        for w in sorted(graph.get(v, {})):
            if w == start and len(path) > 1:
                return True
            if w in comp and w not in seen:
                seen.add(w)
                path.append(w)
                if walk(w):
                    return True
                path.pop()
        return False

    walk(start)
    return path


def main() -> int:
    srcs = [Path(a) for a in sys.argv[1:]] or sorted(
        p.parent for p in ROOT.glob("**/src/lib.rs") if "target" not in p.parts and ".gpu" not in str(p))
    srcs += [] if sys.argv[1:] else sorted(
        p.parent for p in ROOT.glob("**/src/main.rs")
        if "target" not in p.parts and not (p.parent / "lib.rs").exists())
    problems = [c for src in srcs for c in circles(src)]
    for p in problems:
        print(p)
    print(f"import-circles: {len(srcs)} crates, {len(problems)} circles")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
