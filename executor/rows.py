"""Consecutive loop nests over the same rows run as one loop over the rows.

A layer norm is three nests over an n×p array: the row sums, then the centred values and their
squares' sums, then the division. Each reads the whole array from memory. When every value one
nest hands the next is written and read at the row being computed (`b[i0, …]`), the rows can
be computed one after another instead, each nest's work on a row done before the next row
starts: the row stays in the cache between the nests, and memory is read once. A softmax's
maximum, exponentials and division fuse the same way.

This pass works on the generated lines (codegen.Emitter.function calls it), where every fused
nest (codegen.Emitter.emit_group) opens with `for i0 in range(n):` and nothing else does. Two
nests at one indentation, over the same outer size, with only new buffers allocated between
them (`bN = K.empty(…)`, moved up), are merged when

- neither carries a number across its rows (a name its body assigns that a line outside it
  names: a total's start before the loop, its use after it);
- every array either writes is written at `i0` first; every array written in one and read
  in the other is read at `i0` first too; and no other name the two read may be a view of it (views are followed through the
  assignments `v = x[…]`, `x.reshape(…)`, `x.T`, `x`, `a if c else b` anywhere in the
  function); an array written and named bare (passed whole) stops the merge.

The merged loop is a prange when any of the nests was one (their rows are independent).
"""

from __future__ import annotations

import re
from collections import Counter

_NEST = re.compile(r"^(?P<ind> *)for i0 in (?P<kind>p?range)\((?P<dim>.+)\):$")
_ALLOC = re.compile(r"^ *\w+ = K\.empty\(\([\w\s,*+-]*\)\)$")
_ACCESS = re.compile(r"\b([A-Za-z_]\w*)\[([^\[\]]*)\]")
_STORE = re.compile(r"^([A-Za-z_]\w*)\[([^\[\]]*)\] (?:=|\+=) ")
#: A name in a line of generated code (codegen reads them too).
NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_VIEW = re.compile(r"^([A-Za-z_]\w*)(?:\[|\.reshape\(|\.T\b|\.transpose\(|$)")
_EITHER = re.compile(r"^([A-Za-z_]\w*) if .+ else ([A-Za-z_]\w*)$")
#: The names of a nest's row scratch arrays (executor/division.py): private to the row being
#: computed, but one array reused by every row, so a nest using one never joins a prange.
SCRATCH = "row"
_SCRATCH = re.compile(rf"{SCRATCH}\d+")


def fuse_rows(lines: list[str]) -> list[str]:
    """`lines` with runs of row-wise nests merged into one loop each (see the module's doc)."""
    if sum(1 for line in lines if _NEST.match(line)) < 2:
        return lines
    parents = _parents(lines)
    counts = Counter(name for line in lines for name in NAME.findall(line))
    out: list[str] = []
    i = 0
    while i < len(lines):
        head = _NEST.match(lines[i])
        if head is None:
            out.append(lines[i])
            i += 1
            continue
        indent, dim = head["ind"], head["dim"]
        end = _end(lines, i, indent)
        if _carries(lines[i + 1:end], counts):
            out += lines[i:end]
            i = end
            continue
        bodies, parallel, moved = [lines[i + 1:end]], head["kind"] == "prange", []
        while True:
            k = end
            allocs = []
            while k < len(lines) and lines[k].startswith(indent) and _ALLOC.match(lines[k]) \
                    and not lines[k].startswith(indent + " "):
                allocs.append(lines[k])
                k += 1
            nxt = _NEST.match(lines[k]) if k < len(lines) else None
            if nxt is None or nxt["ind"] != indent or nxt["dim"] != dim:
                break
            after = _end(lines, k, indent)
            body = lines[k + 1:after]
            if _carries(body, counts) or not _row_local(
                    [line for b in bodies for line in b], body, parents):
                break
            if (parallel or nxt["kind"] == "prange") and _scratch([*bodies, body]):
                break  # (one scratch row shared by threads)
            moved += allocs
            bodies.append(body)
            parallel = parallel or nxt["kind"] == "prange"
            end = after
        out += moved
        out.append(f"{indent}for i0 in {'prange' if parallel else 'range'}({dim}):")
        for body in bodies:
            out += body
        i = end
    return out


def _scratch(bodies: list[list[str]]) -> bool:
    """Whether any of `bodies` writes a row scratch array."""
    return any(_SCRATCH.fullmatch(m[1])
               for body in bodies for line in body if (m := _STORE.match(line.strip())))


def _carries(body: list[str], counts: Counter) -> bool:
    """Whether a nest carries a scalar across its rows: a name its body assigns (other than
    an index) that lines outside it also name (a total's start before the loop, its use after
    it, or a later nest reading it)."""
    here = Counter(name for line in body for name in NAME.findall(line))
    for line in body:
        text = line.strip()
        target = re.match(r"^(?:for )?([A-Za-z_]\w*)(?: = | \+= | in )", text)
        if target and not re.fullmatch(r"i\d+", target[1]) and counts[target[1]] > here[target[1]]:
            return True
    return False


def _end(lines: list[str], start: int, indent: str) -> int:
    """The index of the first line after the block opened at `start`."""
    k = start + 1
    deeper = indent + " "
    while k < len(lines) and lines[k].startswith(deeper):
        k += 1
    return k


def _parents(lines: list[str]) -> dict[str, set[str]]:
    """For each name assigned in `lines`, the names whose arrays it may be a view of."""
    found: dict[str, set[str]] = {}
    for line in lines:
        left, sep, right = line.strip().partition(" = ")
        if not sep or "[" in left or not re.fullmatch(r"[\w, ]+", left):
            continue
        targets = [t.strip() for t in left.split(",") if t.strip()]
        values = _split_top(right)
        if len(values) != len(targets):
            values = [right] * len(targets)
        for target, value in zip(targets, values, strict=True):
            value = value.strip().strip("()") if value.strip().startswith("(") else value.strip()
            either = _EITHER.match(value)
            view = _VIEW.match(value)
            if either:
                found.setdefault(target, set()).update(either.groups())
            elif view and not value.startswith("K.") and not value.startswith("np."):
                found.setdefault(target, set()).add(view[1])
    return found


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _roots(name: str, parents: dict[str, set[str]]) -> set[str]:
    """`name` and every name it may be a view of."""
    seen, stack = set(), [name]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(parents.get(n, ()))
    return seen


def _uses(lines: list[str]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The arrays written and read in `lines`, each with the first index of every access."""
    writes: dict[str, set[str]] = {}
    reads: dict[str, set[str]] = {}
    for line in lines:
        text = line.strip()
        store = _STORE.match(text)
        if store:
            writes.setdefault(store[1], set()).add(store[2].split(",")[0].strip())
            if text[store.end() - 3:store.end()] == "+= ":
                reads.setdefault(store[1], set()).add(store[2].split(",")[0].strip())
            text = text[store.end():]
        for name, index in _ACCESS.findall(text):
            reads.setdefault(name, set()).add(index.split(",")[0].strip())
    for name in [n for n in (*writes, *reads) if _SCRATCH.fullmatch(n)]:
        writes.pop(name, None)  # a row's own scratch (executor/division.py): filled and
        reads.pop(name, None)   # read again within the row
    return writes, reads


def _row_local(first: list[str], second: list[str], parents: dict[str, set[str]]) -> bool:
    """Whether `second` may run row by row interleaved with `first` (see the module's doc)."""
    w1, r1 = _uses(first)
    w2, r2 = _uses(second)
    if any(index != {"i0"} for index in (*w1.values(), *w2.values())):
        return False  # (a row's results go elsewhere: a sum into other rows, another layout)
    written = set(w1) | set(w2)
    accessed = written | set(r1) | set(r2)
    for name in written:
        if _bare(name, first + second):
            return False
        shared = name in (set(w1) & (set(w2) | set(r2))) or name in (set(w2) & set(r1))
        if shared:
            indices = w1.get(name, set()) | w2.get(name, set()) | r1.get(name, set()) \
                | r2.get(name, set())
            if indices != {"i0"}:
                return False
        roots = _roots(name, parents)
        for other in accessed - {name}:
            if roots & _roots(other, parents):
                return False
    return True


def _bare(name: str, lines: list[str]) -> bool:
    """Whether `name` appears in `lines` other than subscripted."""
    pattern = re.compile(rf"\b{re.escape(name)}\b(?!\[)")
    return any(pattern.search(line) for line in lines)
