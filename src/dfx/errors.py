"""The errors dfx raises on bad input. Each message is one line naming the problem and the fix.

Beside the error classes live the few mechanisms every command shares at its edge: a message
made one line (:func:`one_line`), user code that calls ``sys.exit()`` turned into an error
(:func:`user_code`), path options refused when empty (:func:`refuse_empty_paths`), and a second
``--hw`` refused where a command takes one (:func:`refuse_repeated_hw`).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

__all__ = [
    "DfxError",
    "CaptureError",
    "ModelSpecError",
    "one_line",
    "user_code",
    "refuse_empty_paths",
    "refuse_repeated_hw",
]

# Longest message printed; a longer one (a document quoted back, many paths) loses its middle.
MAX_MESSAGE_CHARS = 1000


class DfxError(Exception):
    """Base class: a user-facing error whose message is one line, printed without a traceback."""


class CaptureError(DfxError):
    """The model could not be captured (not a module, inputs don't match, every tracer failed)."""


class ModelSpecError(DfxError):
    """A model name, file or Hugging Face config could not be turned into a model."""


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` with every run of whitespace (newlines included) as one space, at most ``limit`` chars.

    A longer text keeps its start (what is wrong) and its end (the fix), with `` ... `` between.

    Examples
    --------
    >>> one_line("bad\\nvalue  here")
    'bad value here'
    >>> one_line("abcdefghijklmnop", limit=11)
    'abc ... nop'
    """
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    keep = max(limit - 5, 2)
    return flat[: keep // 2] + " ... " + flat[len(flat) - (keep - keep // 2) :]


@contextlib.contextmanager
def user_code(what: str, error: type[DfxError] = ModelSpecError) -> Iterator[None]:
    """Run the user's code (importing a model file, building or calling a model) inside this block.

    A ``sys.exit()`` there would otherwise end dfx with the user's status, 0 included, as if the
    command had succeeded; it becomes ``error`` naming ``what``. ``KeyboardInterrupt`` passes
    through (the command line turns it into status 130).

    Raises
    ------
    DfxError
        ``error``, when the code in the block raised ``SystemExit``.
    """
    try:
        yield
    except SystemExit as exc:
        raise error(f"{what} called sys.exit({exc.code!r}); remove the call, dfx cannot go on without it") from None


def refuse_empty_paths(command) -> None:
    """Make every path parameter of the typer ``command`` tree refuse ``''`` (which reads as ``.``).

    ``--out ''`` would otherwise write into the current folder; an empty path is almost always an
    unset shell variable, so it is a usage error naming the option.
    """
    for param in getattr(command, "params", ()):
        if _is_path(param) and not getattr(param, "_dfx_nonempty", False):
            param._dfx_nonempty = True
            param.process_value = _refusing_empty(param, param.process_value)
    for sub in getattr(command, "commands", {}).values():
        refuse_empty_paths(sub)


def _is_path(param) -> bool:
    desc = getattr(param, "type_descriptor", None)  # typer >= 0.29 types its parameters lazily
    return bool(getattr(desc, "is_path", False))


def _refusing_empty(param, process_value):
    def checked(ctx, value):
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(v, str) and v.strip() == "" for v in values):
            import typer

            raise typer.BadParameter("is empty; give a path (use . for the current folder)", ctx=ctx, param=param)
        return process_value(ctx, value)

    return checked


def refuse_repeated_hw(command) -> None:
    """Make every command of the typer ``command`` tree whose ``--hw`` takes one profile refuse two.

    click keeps the last of a repeated single-valued option, so ``dfx compile M --hw h100 --hw a100``
    ran on the A100 alone, and ``--hw h100,a100``'s refusal tells the user to repeat ``--hw``: the
    other profile was dropped without a word. ``analyze``, ``sweep``, ``serve`` and others take many.
    """
    hw = [p for p in getattr(command, "params", ()) if "--hw" in getattr(p, "opts", ())]
    if hw and not hw[0].multiple and not getattr(command, "_dfx_one_hw", False):
        command._dfx_one_hw = True
        command.parse_args = _one_hw(command, command.parse_args)
    for sub in getattr(command, "commands", {}).values():
        refuse_repeated_hw(sub)


def _one_hw(command, parse_args):
    def checked(ctx, args):
        given, i = [], 0
        while i < len(args) and args[i] != "--":
            if args[i] == "--hw" and i + 1 < len(args):
                given.append(args[i + 1])
                i += 1
            elif args[i].startswith("--hw="):
                given.append(args[i].removeprefix("--hw="))
            i += 1
        if len(given) > 1:
            raise DfxError(
                f"dfx {command.name} takes one --hw, got {len(given)} ({', '.join(given)}); run it once per profile"
            )
        return parse_args(ctx, args)

    return checked
