"""The one console every command prints its results to (standard output).

Piped output (files, tests, CI logs) gets wide lines instead of rich's 80-column default; one
object shared by `dfx.cli` and every package's command module.
"""

from __future__ import annotations

import sys

from rich.console import Console

__all__ = ["stdout"]

stdout = Console(width=None if sys.stdout.isatty() else 200)
