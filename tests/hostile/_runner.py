"""The hostile-input suite's runner: ``dfx.cli.main`` in this process, with argv, cwd and streams swapped.

In-process keeps 150+ cases fast (torch is imported once); the few that need a real process (a
signal, an import-time ``sys.exit``) run ``python -m dfx.cli`` in a subprocess instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    rc: int
    out: str
    err: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def run_main(args: list[str], cwd: Path) -> Run:
    """Run ``dfx ARGS`` through the real entry point ``dfx.cli:main`` in ``cwd``; its status, stdout, stderr."""
    from dfx.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_argv, old_cwd = sys.argv, os.getcwd()
    sys.argv = ["dfx", *args]
    start = time.perf_counter()
    rc = 0
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    return Run(rc, out.getvalue(), err.getvalue(), time.perf_counter() - start)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a digest of its bytes: to show no user file changed."""
    return {
        str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
