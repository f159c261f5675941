"""Read a saved dfx document from a file, refusing anything that is not one in one line.

Every command that reads a document back (``dfx report`` its analysis, ``--simulation`` and
``--validation``; ``dfx simulate`` a saved analysis) goes through :func:`read_document` first, so a
lengths file, a model file, an empty file or another command's document is named as what it is
("lengths.txt is not a dfx document (not JSON: ...)", "sim.json is a dfx.simulation/1 document,
not dfx.analysis/1") instead of surfacing a JSON parser's or a key check's complaint. The typed
checks of each document (:mod:`dfx.schema`, :mod:`dfx.report.doccheck`) follow it. Torch-free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dfx.errors import DfxError
from dfx.safe_load import DocumentError, load_json

__all__ = ["read_document"]


def read_document(path: Path | str, schemas: str | tuple[str, ...], *, writer: str) -> dict[str, Any]:
    """The JSON object in ``path``, if it is a dfx document whose ``schema`` is one of ``schemas``.

    Parameters
    ----------
    path : Path or str
        The file to read.
    schemas : str or tuple of str
        The accepted schema tags, e.g. ``"dfx.analysis/1"``; the first is named in messages.
    writer : str
        What writes such a document, for the fix: ``"the analysis.json `dfx analyze --out DIR` writes"``.

    Raises
    ------
    DfxError
        One line naming the file and what it is instead: missing, a folder, not UTF-8 text, empty,
        not JSON, not an object, without a ``schema`` key, or another kind of document; and the
        refusals of :func:`dfx.safe_load.load_json` (NaN, duplicate keys, nesting, huge numbers).

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> p = os.path.join(folder, "lengths.txt")
    >>> _ = open(p, "w").write("10\\n20\\n")
    >>> read_document(p, "dfx.analysis/1", writer="`dfx analyze --out DIR`")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dfx.errors.DfxError: ...lengths.txt is not a dfx document (not JSON: Extra data at line 2 column 1); pass `dfx analyze --out DIR`
    """
    path = Path(path)
    accepted = (schemas,) if isinstance(schemas, str) else tuple(schemas)
    fix = f"pass {writer}"
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise DfxError(f"cannot read {path}: it is a folder; {fix}") from None
    except FileNotFoundError:
        raise DfxError(f"cannot read {path}: no such file; {fix}") from None
    except OSError as exc:
        raise DfxError(f"cannot read {path}: {exc.strerror or exc}; {fix}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DfxError(
            f"{path} is not a dfx document (not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start}); {fix}"
        ) from None
    if not text.strip():
        raise DfxError(f"{path} is empty, not a dfx document; {fix}")
    try:
        doc = load_json(text)
    except DocumentError as exc:  # a JSON document dfx refuses to read: NaN, duplicate keys, ...
        raise DfxError(f"cannot read {path}: {exc}") from None
    except (json.JSONDecodeError, ValueError) as exc:
        reason = (
            f"{exc.msg} at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        )
        raise DfxError(f"{path} is not a dfx document (not JSON: {reason}); {fix}") from None
    if not isinstance(doc, dict):
        raise DfxError(f"{path} is not a dfx document (a JSON {_json_kind(doc)}, not an object); {fix}")
    schema = doc.get("schema")
    if schema not in accepted:
        if not isinstance(schema, str) or not schema.startswith("dfx."):
            what = 'no "schema" key' if "schema" not in doc else f"schema {schema!r}"
            raise DfxError(f"{path} is not a dfx document ({what}); {fix}")
        raise DfxError(f"{path} is a {schema} document, not {accepted[0]}; {fix}")
    return doc


def _json_kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
