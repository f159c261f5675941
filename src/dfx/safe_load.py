"""Read YAML and JSON documents a user hands dfx without letting the text decide the cost of reading.

:func:`load_yaml` is ``yaml.safe_load`` that refuses aliases (``*name``: a 1 KB "billion laughs"
file expands to gigabytes), nesting deeper than :data:`MAX_DEPTH`, duplicate keys (YAML keeps the
last one silently) and integers no float can hold. :func:`load_json` is ``json.loads`` with the
same depth, size and number rules (JSON has no aliases; Python's ``json`` keeps the last duplicate
and reads ``NaN`` and ``Infinity``, which no dfx document writes).

Both raise :class:`DocumentError`, a ``ValueError`` whose message is one line naming the place.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml

__all__ = ["DocumentError", "MAX_DEPTH", "MAX_DOCUMENT_BYTES", "load_json", "load_yaml"]

MAX_DEPTH = 64  # no dfx document nests deeper than about 6; 64 leaves room and stays far from recursion limits
MAX_DOCUMENT_BYTES = 256 * 2**20  # a 10,000-node analysis.json is about 20 MB
_FLOAT_MAX = sys.float_info.max
_FLOAT_DIGITS = 309  # decimal digits of the largest float, 1.8e308


class DocumentError(json.JSONDecodeError):
    """A document dfx refuses to read; a ``ValueError`` (and ``JSONDecodeError``) so old handlers catch it."""

    def __init__(self, message: str, text: str = "", pos: int = 0) -> None:
        super().__init__(message, text, pos)
        self.args = (message,)

    def __str__(self) -> str:
        return self.args[0]


class _YamlRefused(yaml.YAMLError, DocumentError):
    """Raised inside the YAML loader: both a ``YAMLError`` and a :class:`DocumentError`."""


class _Loader(yaml.SafeLoader):
    _depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _YamlRefused(
                f"line {event.start_mark.line + 1}: YAML aliases (*{event.anchor}) are not accepted; "
                "write the value out"
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _YamlRefused(f"line {mark.line + 1}: nested more than {MAX_DEPTH} levels deep; flatten it")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    if key in seen:
                        raise _YamlRefused(
                            f"line {key_node.start_mark.line + 1}: duplicate key {key!r}; "
                            "keep one (YAML would silently use the last)"
                        )
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _checked_int(digits: str, where: str, error: type[DocumentError] = DocumentError, convert=int) -> int:
    """``convert(digits)``, refusing integers no float can hold (more than 309 digits) before converting."""
    if len(digits.lstrip("+-0").replace("_", "")) > _FLOAT_DIGITS or abs(value := convert(digits)) > _FLOAT_MAX:
        raise error(f"{where}: the integer {digits[:12]}... is too large for a float; give a real figure")
    return value


def _construct_int(loader, node):
    convert = lambda _text: yaml.SafeLoader.construct_yaml_int(loader, node)  # noqa: E731
    return _checked_int(str(node.value), f"line {node.start_mark.line + 1}", _YamlRefused, convert)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _check_size(text: str | bytes) -> None:
    if len(text) > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"the document is {len(text):,} bytes, beyond dfx's budget of {MAX_DOCUMENT_BYTES:,}")


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` without aliases, deep nesting, duplicate keys or float-overflowing integers.

    Raises
    ------
    DocumentError
        Also a ``yaml.YAMLError`` for the refusals made while parsing.

    Examples
    --------
    >>> load_yaml("a: 1\\nb: [2, 3]")
    {'a': 1, 'b': [2, 3]}
    """
    _check_size(text)
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 -- a SafeLoader subclass
    except RecursionError:
        raise _YamlRefused(f"nested too deeply to read (more than {MAX_DEPTH} levels); flatten it") from None


def _reject_constant(name: str) -> float:
    raise DocumentError(f"{name} is not a number dfx accepts in a document; write a finite figure")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise DocumentError(f"the number {text[:20]} is too large for a float; give a real figure")
    return value


def _depth_of(value: Any, depth: int = 0) -> int:
    stack = [(value, depth)]
    deepest = 0
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return deepest


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)`` refusing ``NaN``/``Infinity``, duplicate keys, deep nesting and huge integers.

    Raises
    ------
    DocumentError
        A ``json.JSONDecodeError`` (so a ``ValueError``) naming the problem.

    Examples
    --------
    >>> load_json('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    """
    _check_size(text)

    def pairs(items):
        out = {}
        for key, value in items:
            if key in out:
                raise DocumentError(f"duplicate key {key!r}; keep one (JSON readers would silently use the last)")
            out[key] = value
        return out

    try:
        data = json.loads(
            text,
            parse_constant=_reject_constant,
            object_pairs_hook=pairs,
            parse_float=_finite_float,
            parse_int=lambda digits: _checked_int(digits, "a number"),
        )
    except RecursionError:
        raise DocumentError(f"nested too deeply to read (more than {MAX_DEPTH} levels); flatten it") from None
    if _depth_of(data) > MAX_DEPTH:
        raise DocumentError(f"nested more than {MAX_DEPTH} levels deep; flatten it")
    return data
