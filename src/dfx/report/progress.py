"""Progress on stderr for long work: one transient rich status line, only when stderr is a terminal.

Stages announce what they start with :func:`step` (a no-op unless a caller opened
:func:`progress_on_stderr`), so a library call, a pipe, a test or ``--json`` output stays silent
and byte-for-byte the same; the command line opens it around its work. ``DFX_NO_PROGRESS=1`` turns
it off on a terminal too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from contextvars import ContextVar
from typing import Any, Callable, Iterator, TextIO

__all__ = ["progress_on_stderr", "step", "with_progress"]

_REPORTER: ContextVar[Callable[[str], None] | None] = ContextVar("dfx_progress", default=None)


def step(text: str) -> None:
    """Say what starts now (``"capturing gpt2-block"``) on the open status line, if any."""
    reporter = _REPORTER.get()
    if reporter is not None:
        reporter(text)


def _wanted(stream: TextIO) -> bool:
    if os.environ.get("DFX_NO_PROGRESS", "") not in ("", "0"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


@contextlib.contextmanager
def progress_on_stderr(title: str, *, stream: TextIO | None = None, force: bool | None = None) -> Iterator[None]:
    """A status line ``title: <current step>`` on ``stream`` (default stderr) while the block runs.

    Shown only where ``stream`` is a terminal (``force`` overrides, for tests); it is erased when
    the block ends, so nothing of it stays in the terminal's scrollback.
    """
    out = sys.stderr if stream is None else stream
    if not (_wanted(out) if force is None else force):
        yield
        return
    from rich.console import Console

    console = Console(file=out, force_terminal=True if force else None)
    with console.status(f"{title}", spinner="dots") as status:

        def report(text: str) -> None:
            status.update(f"{title}: {text}")

        token = _REPORTER.set(report)
        try:
            yield
        finally:
            _REPORTER.reset(token)


def with_progress(title: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run inside :func:`progress_on_stderr` ``(title)``: ``with_progress("dfx analyze", analyze)(model, ...)``."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with progress_on_stderr(title):
            return fn(*args, **kwargs)

    return run
