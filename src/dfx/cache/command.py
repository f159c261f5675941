"""``dfx cache info`` and ``dfx cache clear``: the persistent capture cache (:mod:`dfx.cache.store`).

``dfx.cli`` calls :func:`register`. Thin: parse, call :class:`dfx.cache.CaptureCache`, print.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

__all__ = ["register"]

cache_app = typer.Typer(no_args_is_help=True, help="The capture cache: captured graphs kept between runs.")

_DIR_HELP = "The cache folder (default: $DFX_CACHE_DIR, else $XDG_CACHE_HOME/dfx, else ~/.cache/dfx)."


@cache_app.command("info")
def info(
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print {root, entries, bytes} as JSON."),
) -> None:
    """Where the capture cache is, how many captures it holds and their size on disk."""
    from dfx.cache import CaptureCache
    from dfx.report.console import format_bytes

    got = CaptureCache(cache_dir).info()
    if as_json:
        sys.stdout.write(json.dumps(got.to_dict()) + "\n")
        return
    typer.echo(f"capture cache {got.root}: {got.entries:,} captures, {format_bytes(got.bytes)}")


@cache_app.command("clear")
def clear(cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_DIR_HELP)) -> None:
    """Remove every capture from the cache (the next run captures again)."""
    from dfx.cache import CaptureCache

    cache = CaptureCache(cache_dir)
    typer.echo(f"removed {cache.clear():,} captures from {cache.root}")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
