"""Write output files safely: never overwrite a user's file silently, never leave half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dfx.errors import DfxError

__all__ = ["check_target_file", "check_targets", "check_writable", "write_outputs"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_targets(out_dir: str | Path, names: list[str], *, force: bool = False) -> list[Path]:
    """The target paths of ``names`` in ``out_dir``, refusing any that exists unless ``force``.

    Call it before expensive work whose results would then be refused.

    Raises
    ------
    DfxError
        If ``out_dir`` is a file, or in a file, or no file can be written there (:func:`check_writable`),
        or a target exists and ``force`` is false.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DfxError(f"--out {out} is a file, not a folder; choose a folder path")
    check_writable(out)
    targets = [out / name for name in names]
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        # names inside the folder, not full paths: the fix must survive the one-line message cap
        listed = ", ".join(t.name for t in existing)
        verb, pronoun = ("already exists", "it") if len(existing) == 1 else ("already exist", "them")
        raise DfxError(f"{listed} {verb} in {out}; pass --force to overwrite {pronoun} or choose another --out")
    return targets


def check_writable(out: str | Path, option: str = "--out") -> None:
    """Refuse a folder no file can be written into, before the work (a calibration, a capture) is done.

    The folder itself, or where it does not exist yet its nearest existing parent, gets a temporary
    file, removed at once: a read-only mount, ``/proc`` or a file in the way fails here instead of
    after the work (``dfx calibrate --out /proc/x.yaml`` measured for 45 s, then could not write).

    Raises
    ------
    DfxError
        One line naming ``option`` (``--out`` unless told) and the reason.
    """
    out = Path(out)
    probe = out
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        raise DfxError(
            f"cannot write into {option} {out}: {probe} is a file, not a folder; choose a folder you can write to"
        )
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dfx-write-check-", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise DfxError(
            f"cannot write into {option} {out}: {exc.strerror or exc}; choose a folder you can write to"
        ) from None


def check_target_file(path: str | Path, option: str, *, force: bool = False) -> Path:
    """``path`` as a file a command may write, checked before the work: its folder exists, it is not
    a folder, it does not exist unless ``force``, and a file can be written in its folder
    (:func:`check_writable`: ``--trace /proc/t.json`` was refused only after the analysis).

    Raises
    ------
    DfxError
        Naming ``option`` and the fix: an empty path, a missing folder, a folder, an existing file,
        a folder no file can be written into.
    """
    text = str(path)
    if not text.strip():
        raise DfxError(f"{option} is empty; give a file path")
    target = Path(text).expanduser()
    folder = target.parent
    if folder.exists() and not folder.is_dir():
        raise DfxError(f"{option} {text}: {str(folder)!r} is a file, not a folder; choose another path")
    if not folder.is_dir():
        raise DfxError(f"{option} {text}: folder {str(folder)!r} does not exist; create it or choose another path")
    if target.is_dir():
        raise DfxError(f"{option} {text} is a folder; give a file path")
    if target.exists() and not force:
        raise DfxError(f"{text} already exists; pass --force to overwrite it or choose another {option}")
    check_writable(folder, option)
    return target


def write_outputs(out_dir: str | Path, files: dict[str, str | bytes], *, force: bool = False) -> list[Path]:
    """Write ``files`` (name -> text, or bytes for binary files) into ``out_dir``, atomically, refusing to overwrite.

    Every target is checked before anything is written, so a refusal leaves the folder as it was.
    Each file is written to a temporary file in the same folder and renamed over the target.

    Raises
    ------
    DfxError
        If ``out_dir`` is a file, a target exists and ``force`` is false, or the folder cannot be
        written (permissions, a missing parent that cannot be made, a target that is a folder).
    """
    targets = check_targets(out_dir, list(files), force=force)
    out = Path(out_dir)
    temps: list[str] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        # Write every file to a temporary name first, then rename them all: a failure part-way
        # leaves the folder as it was, not half old and half new.
        for target, text in zip(targets, files.values()):
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=out)
            temps.append(tmp)
            if isinstance(text, bytes):
                with os.fdopen(fd, "wb") as fh:
                    fh.write(text)
            else:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                    fh.write(text)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the user's usual mode
        for target in targets:
            if target.is_dir():
                raise IsADirectoryError(f"{target} is a folder")
        for target, tmp in zip(targets, temps):
            os.replace(tmp, target)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise DfxError(f"cannot write into --out {out}: {reason}; choose a folder you can write to") from None
    finally:
        for tmp in temps:
            Path(tmp).unlink(missing_ok=True)
    return targets
