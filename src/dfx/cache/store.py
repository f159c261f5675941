"""A persistent capture cache: captured graphs on disk, keyed by what the capture depends on.

A capture (``torch.export`` of a model, 0.4 to 12 s) depends only on the model's definition, the
sizes and dtype it is built with, the capture method, and the torch and dfx code that trace it. A
:class:`CaptureCache` stores each captured :class:`dfx.ir.Graph` (its JSON, gzip-compressed) under
a :class:`CaptureKey` that holds exactly those, so ``dfx analyze`` and ``dfx sweep`` capture a
model once per machine, not once per run::

    definition = sha256(the hf: config.json | the model file | dfx.models' sources)   # the model
    code       = sha256(dfx.__version__, dfx's capture, ir and models sources)      # what traces it
    key        = (kind, spec, definition, batch, seq, dtype, method, train, input_shapes,
                  code, torch, transformers)
    file       = <root>/captures/<sha256(key)[:32]>.json.gz

Where the cache lives: ``$DFX_CACHE_DIR``, else ``$XDG_CACHE_HOME/dfx``, else ``~/.cache/dfx``
(the XDG base directory specification). An entry that cannot be read (truncated, not gzip, another
key, not a graph) is ignored with a one-line warning and captured again; a writer writes a
temporary file in the same folder and renames it over the entry (atomic on POSIX), so concurrent
writers of one key leave one whole entry.

The cache is an explicit object the caller makes and passes in (``dfx.analysis.analyze(...,
cache=CaptureCache())``; ``dfx analyze`` and ``dfx sweep`` make one unless ``--no-cache``); its key
prints (``str(key)``), so a miss can be explained. It imports no torch: a hit costs reading one
file, with no torch import.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

__all__ = ["CACHE_SCHEMA", "CacheInfo", "CaptureCache", "CaptureKey", "default_cache_dir", "definition_digest"]

CACHE_SCHEMA = "dfx.capture-cache/1"
_SRC = Path(__file__).resolve().parents[1]  # src/dfx
_CODE_PACKAGES = ("capture", "ir", "models")  # the code a capture's graph depends on
_HF_PREFIX = "hf:"
_HF_ALIASES = {"bert-base": "bert-base-uncased"}  # dfx.models.hf._ALIASES (kept equal by a test)
_DIGEST_CHARS = 32  # 128 bits of sha256: a file name, no collision in any cache a user keeps


def default_cache_dir() -> Path:
    """``$DFX_CACHE_DIR``, else ``$XDG_CACHE_HOME/dfx``, else ``~/.cache/dfx`` (XDG base directories)."""
    if os.environ.get("DFX_CACHE_DIR"):
        return Path(os.environ["DFX_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "dfx"


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def _code_digest() -> str:
    """sha256 of dfx's version and the sources of the packages that capture (read once per process)."""
    from dfx._version import __version__

    h = hashlib.sha256(__version__.encode())
    for package in _CODE_PACKAGES:
        for path in sorted((_SRC / package).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json"):
                h.update(str(path.relative_to(_SRC)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()


@functools.cache
def _version(dist: str) -> str:
    """The installed version of ``dist`` (read once per process: each read parses its metadata file)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def definition_digest(spec: str) -> str | None:
    """sha256 of what defines the model ``spec`` names, or ``None`` where dfx cannot tell (not cached).

    ``hf:NAME`` or ``hf:path/config.json``: the config file's bytes. ``path/to/file.py:Class``: the
    file's bytes (NB: modules the file imports are not hashed; a change there needs ``dfx cache
    clear``). A built-in name: ``"builtin"`` (its code is in :func:`_code_digest`).
    """
    if spec.startswith(_HF_PREFIX):
        name = _HF_ALIASES.get(spec[len(_HF_PREFIX) :], spec[len(_HF_PREFIX) :])
        shipped = _SRC / "models" / "hf_configs" / f"{name}.json"
        path = shipped if shipped.is_file() else Path(name).expanduser()
        path = path / "config.json" if path.is_dir() else path
        return _sha256_file(path) if path.is_file() else None
    if ":" in spec:
        path = Path(spec.rpartition(":")[0]).expanduser()
        return _sha256_file(path) if path.suffix == ".py" and path.is_file() else None
    return "builtin"


@dataclass(frozen=True)
class CaptureKey:
    """Everything a captured graph depends on; ``str(key)`` prints it, :attr:`digest` names its file."""

    kind: str  # "forward" (dfx.analysis.capture_spec), "step" (an inference step)
    spec: str
    definition: str  # definition_digest(spec)
    batch: int | None
    seq: int | None
    dtype: str
    method: str
    train: bool = False
    input_shapes: tuple[tuple[int, ...], ...] | None = None
    extra: str = ""  # what else the kind depends on (a step's tokens and KV length)
    code: str = ""  # _code_digest()
    torch: str = ""
    transformers: str = ""

    @classmethod
    def of(
        cls,
        kind: str,
        spec: str,
        *,
        batch: int | None,
        seq: int | None,
        dtype: str,
        method: str,
        train: bool = False,
        input_shapes: Sequence[Sequence[int]] | None = None,
        extra: str = "",
    ) -> CaptureKey | None:
        """The key of this capture, or ``None`` where the model's definition cannot be hashed."""
        definition = definition_digest(spec)
        if definition is None:
            return None
        shapes = None if input_shapes is None else tuple(tuple(int(d) for d in s) for s in input_shapes)
        if batch is None and shapes is None and ":" not in spec.removeprefix(_HF_PREFIX):
            batch = 1  # what a built-in or hf: model is built with when no batch is given
        return cls(
            kind,
            spec,
            definition,
            batch,
            seq,
            dtype,
            method,
            bool(train),
            shapes,
            extra,
            _code_digest(),
            _version("torch"),
            _version("transformers"),
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["input_shapes"] = None if self.input_shapes is None else [list(s) for s in self.input_shapes]
        return d

    @property
    def digest(self) -> str:
        """sha256 of the key's canonical JSON, cut to 32 hex characters: the entry's file name."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:_DIGEST_CHARS]

    def __str__(self) -> str:
        sizes = f"batch={self.batch} seq={self.seq}" if self.input_shapes is None else f"shapes={self.input_shapes}"
        return (
            f"{self.kind} {self.spec} {sizes} {self.dtype} method={self.method}"
            f"{' train' if self.train else ''}{' ' + self.extra if self.extra else ''} "
            f"definition={self.definition[:12]} code={self.code[:12]} torch={self.torch} "
            f"transformers={self.transformers} -> {self.digest}"
        )


@dataclass(frozen=True)
class CacheInfo:
    """What ``dfx cache info`` prints: where the cache is, its entries and their bytes."""

    root: str
    entries: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "entries": self.entries, "bytes": self.bytes}


class CaptureCache:
    """Captured graphs on disk under ``root/captures`` (default :func:`default_cache_dir`).

    Parameters
    ----------
    root : path, optional
        The cache folder; ``None``: :func:`default_cache_dir` (read when the cache is made).

    Examples
    --------
    >>> import tempfile
    >>> from dfx.ir import Graph
    >>> cache = CaptureCache(tempfile.mkdtemp())
    >>> key = CaptureKey.of("forward", "mlp", batch=1, seq=None, dtype="float32", method="auto")
    >>> cache.get(key) is None
    True
    >>> cache.put(key, Graph((), (), "empty"))
    >>> cache.get(key)[0].name, cache.info().entries
    ('empty', 1)
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"CaptureCache({str(self.root)!r})"

    @property
    def folder(self) -> Path:
        return self.root / "captures"

    def path(self, key: CaptureKey) -> Path:
        return self.folder / f"{key.digest}.json.gz"

    def get(self, key: CaptureKey) -> tuple[Any, dict[str, Any]] | None:
        """The graph stored under ``key`` and its description, or ``None`` (absent, or unreadable: then
        a one-line warning)."""
        from dfx.ir import Graph

        path = self.path(key)
        try:
            raw = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        try:
            doc = json.loads(gzip.decompress(raw))
            if doc["schema"] != CACHE_SCHEMA or doc["key"] != key.to_dict():  # a missing key is unreadable too
                raise ValueError("its key differs from the one asked for")
            graph, info = Graph.from_dict(doc["graph"]), dict(doc["info"])
            graph = replace(graph, meta=tuple(doc["graph"]["meta"].items()))  # the capture's order, not sorted
        except Exception as exc:  # noqa: BLE001 - any unreadable entry is a miss, never a crash
            warnings.warn(
                f"dfx cache: ignoring unreadable entry {path} ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:120]}); capturing again",
                stacklevel=2,
            )
            self.misses += 1
            return None
        self.hits += 1
        return graph, info

    def put(self, key: CaptureKey, graph: Any, info: dict[str, Any] | None = None) -> None:
        """Store ``graph`` and its description ``info`` (JSON values) under ``key``: a temporary file in
        the same folder, renamed over the entry.

        A cache that cannot be written (a read-only folder, a full disk) is skipped with a warning.
        """
        doc = {"schema": CACHE_SCHEMA, "key": key.to_dict(), "info": dict(info or {}), "graph": graph.to_dict()}
        data = gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), compresslevel=1)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json.gz")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path(key))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            warnings.warn(f"dfx cache: cannot write {self.folder} ({exc.strerror or exc}); not cached", stacklevel=2)

    def info(self) -> CacheInfo:
        files = [p for p in self.folder.glob("*.json.gz")] if self.folder.is_dir() else []
        return CacheInfo(str(self.root), len(files), sum(p.stat().st_size for p in files))

    def clear(self) -> int:
        """Remove every entry (and stray temporary files); returns the entries removed."""
        if not self.folder.is_dir():
            return 0
        removed = 0
        for p in self.folder.iterdir():
            if p.name.endswith(".json.gz") and p.is_file():
                p.unlink(missing_ok=True)
                removed += not p.name.startswith(".tmp-")
        return removed
