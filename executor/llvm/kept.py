"""Machine code on disk: each module's object code kept in the private cache directory's folder
`llvm/`, named by a hash of everything it depends on, so that a new process loads it instead
of running LLVM's optimiser and code generator again.

An object file is machine code that runs once it is loaded, and LLVM's loader reads it
unchecked (a damaged one can crash the process), so it is read and written only through the
cache directory's one checked reader and writer (compiler/directory.py: read_kept,
write_kept): a file someone else could have written, or whose seal is not the user's key's
for its own name (planted, copied, damaged), is removed unread (W902) and compiled afresh. A
folder that cannot be used costs a warning (W900, W901) and a compile in memory, never a
failure."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ...compiler.directory import private_folder, read_kept, unusable, write_kept

#: The folder of the cache directory that holds the object files (`<key>.o`, sealed).
FOLDER = "llvm"
#: The modules whose code decides what machine code a module's IR becomes: the pipeline's
#: options and how it is emitted and loaded.
_MAKERS = ("compile.py", "kept.py", "unlocked.py")


@functools.cache
def _stamp() -> str:
    """What machine code depends on besides its IR, its level and the CPU: llvmlite's and
    LLVM's versions and the sources of `_MAKERS`."""
    here = Path(__file__).resolve().parent
    sources = hashlib.sha256(b"".join((here / name).read_bytes() for name in _MAKERS))
    release = ".".join(map(str, llvm.llvm_version_info))
    return f"llvmlite {llvmlite.__version__} LLVM {release} {sources.hexdigest()}"


def key(text: str, level: int, host: tuple[str, str, str], passes: int = 1) -> str:
    """The name the machine code of `text` (a module's LLVM IR, byte-identical in every
    process for the same program) compiled at `level` in `passes` rounds (compile.rounds) for
    `host` (the target triple, CPU name and CPU features) is kept under: a hash of those and
    of `_stamp`."""
    rounds = f"O{level}" if passes == 1 else f"O{level}x{passes}"
    described = "\0".join([_stamp(), rounds, *host, text])
    return hashlib.sha256(described.encode()).hexdigest()[:32]


@functools.cache
def _back_end() -> str:
    """A hash of every source of the executor (the LLVM back end that writes a module's IR, and
    what it reads: the loop IR's forms, the kernels' sizes, the threads' settings)."""
    executor = Path(__file__).resolve().parents[1]
    sources = sorted(executor.rglob("*.py"))
    return hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()


def described(description: str, level: int, host: tuple[str, str, str]) -> str:
    """The name kept for the machine code of the module that `description` determines whole
    with the back end's sources (`_back_end`): a process that finds it need not write the
    module's IR to look for its code (cpython.py's entries, by their layout)."""
    return key("\0".join(["described", _back_end(), description]), level, host)


def read(name: str, suffix: str = ".o") -> bytes | None:
    """The object code kept as `name` (or another file of the folder's, by its `suffix`: a
    record's, records.py), when it is there and trusted (read_kept), else None."""
    folder = private_folder(FOLDER)
    return None if folder is None else read_kept(folder / f"{name}{suffix}")


def write(name: str, code: bytes, suffix: str = ".o") -> None:
    """Keep `code` as `name` (`suffix`: as `read`), sealed and whole or not at all; when the
    folder cannot be written, after a warning (W901, once), it is not kept."""
    folder = private_folder(FOLDER)
    if folder is None:
        return
    try:
        write_kept(folder / f"{name}{suffix}", code)
    except OSError as err:
        unusable(folder, err)
