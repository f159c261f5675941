"""The graph of a forward sweep point: one symbolic capture per model and bucket, then substitution.

A *bucket* is the set of sizes one symbolic export covers (:mod:`dfx.capture.symbolic`): batch and
seq symbolic where the model allows it, and fixed where it does not:

- a size of 1 is its own bucket (torch specialises sizes 0 and 1);
- a model whose buffers are sized by seq in their first dimension (``llama3-8b-layer``'s rotary
  tables, built to ``max_seq_len=seq``) exports them as inputs with a symbolic dim 0
  (:func:`dfx.capture.symbolic.seq_sized_buffers`), so seq stays symbolic; a model whose parameters,
  or other dimensions, are sized by seq has one bucket per seq, symbolic in batch; likewise for batch;
- so does a model whose inputs carry seq elsewhere than dim 1 (``resnet-block``'s (B, C, S, S)
  feature map): the export leaves seq fixed, and the bucket is keyed by it;
- a size where the export's guards fail (:class:`dfx.capture.symbolic.GuardFailure`) is captured
  concretely, as ``dfx analyze`` would.

The first point of a bucket is captured concretely (:func:`dfx.analysis.capture_spec`, the graph
``dfx analyze`` sees) and exported symbolically once; the symbolic graph takes its node names from
that concrete graph and must then equal it exactly (:meth:`SymbolicCapture.align`), or the bucket
falls back to concrete captures. Every further size of the bucket is a substitution, with no export.
Given a :class:`dfx.cache.CaptureCache`, a point's graph is read from it when there (``dfx analyze``
and earlier sweeps fill it), and stored after its capture or substitution.
:data:`CAPTURES` counts what this process did (``symbolic``, ``concrete``, ``substituted``, ``cached``).
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Any

__all__ = ["CAPTURES", "bucket_key", "forward_graph", "reset"]

# A bucket's integers as polynomials in its sizes (dfx.ir.polytext): degree 1 in batch, 2 in seq
# (a [B, H, S, S] score's stride S * S); grid values per symbolic size, then one check point.
_GRID = {"batch": 2, "seq": 3}

CAPTURES: Counter = Counter()  # "symbolic" exports, "concrete" captures, "substituted", "interpolated", "cached"
_BUCKETS: dict[tuple[Any, ...], Any] = {}  # bucket key -> _Bucket, or None (capture concretely)
# (model, dtype) -> (batch sizes the model, seq sizes it, the buffers seq sizes in dim 0 only)
_FIXED: dict[tuple[str, str], tuple[bool, bool, tuple[str, ...]]] = {}
_FITS: dict[tuple[str, str, int], bool] = {}  # (model, dtype, seq) -> its lifted buffers have seq rows there
_EXPORT_METHODS = ("auto", "export")  # the static path these must reproduce exports first


def reset() -> None:
    """Forget every bucket and count (tests)."""
    CAPTURES.clear()
    _BUCKETS.clear()
    _FIXED.clear()
    _FITS.clear()


def _sized_by(model: str, dtype: str) -> tuple[bool, bool, tuple[str, ...]]:
    """Whether ``model``'s state changes with batch, and with seq, past what a symbolic export takes,
    and the buffers it sizes by seq in dim 0 only (exported as inputs; built three times on the meta device)."""
    key = (model, dtype)
    if key not in _FIXED:
        from dfx.capture.symbolic import seq_sized_buffers, state_shapes
        from dfx.models import resolve

        lifted: tuple[str, ...] = ()
        try:
            base_model = resolve(model, batch=2, seq=16, dtype=dtype).model
            base = state_shapes(base_model)
            by_batch = state_shapes(resolve(model, batch=3, seq=16, dtype=dtype).model) != base
            longer = resolve(model, batch=2, seq=24, dtype=dtype).model
            by_seq = state_shapes(longer) != base
            if by_seq:
                buffers = seq_sized_buffers(base_model, longer, 16, 24)
                by_seq, lifted = buffers is None, buffers or ()
        except Exception:  # noqa: BLE001 - a model these probe sizes do not suit: capture it concretely
            by_batch = by_seq = True
        _FIXED[key] = (by_batch, by_seq, lifted)
    return _FIXED[key]


def _concrete(model: str, batch: int, seq: int, dtype: str, method: str):
    from dfx import analysis

    CAPTURES["concrete"] += 1
    graph, _ = analysis.capture_spec(model, batch=batch, seq=seq, dtype=dtype, method=method)
    return graph


def forward_graph(model: str, batch: int, seq: int, dtype: str, method: str, cache: Any = None):
    """The :class:`dfx.ir.Graph` ``dfx analyze model --batch --seq --dtype`` captures, from this process's
    buckets, or from ``cache`` (a :class:`dfx.cache.CaptureCache`), where it is stored when captured.

    Raises
    ------
    DfxError
        As :func:`dfx.analysis.capture_spec` (a bad model, a capture failure).
    """
    if cache is None:
        return _forward_graph(model, batch, seq, dtype, method)
    from dfx.cache import CaptureKey

    key = CaptureKey.of("forward", model, batch=batch, seq=seq, dtype=dtype, method=method)
    hit = cache.get(key) if key is not None else None
    if hit is not None:
        CAPTURES["cached"] += 1
        return hit[0]
    graph = _forward_graph(model, batch, seq, dtype, method)
    if key is not None:  # the description dfx.analysis.capture_spec gives the same capture
        cache.put(key, graph, {"name": graph.name, "dtype": dtype, "batch": batch, "seq": seq})
    return graph


def bucket_key(model: str, batch: int, seq: int, dtype: str, method: str) -> tuple[Any, ...] | None:
    """The bucket a forward point's graph comes from (points of one bucket share one symbolic export),
    or ``None`` where it is captured concretely (a size of 1 in every symbolic place, a model file).

    Probes the model's sizes once per process (:func:`_sized_by`: three builds on the meta device).
    """
    if method not in _EXPORT_METHODS or (":" in model and not model.startswith("hf:")):
        return None  # file models take --input-shape, not sizes
    by_batch, by_seq, _ = _sized_by(model, dtype)
    sym_batch, sym_seq = batch >= 2 and not by_batch, seq >= 2 and not by_seq
    if not (sym_batch or sym_seq):
        return None
    return (model, dtype, method, None if sym_batch else batch, None if sym_seq else seq)


def _forward_graph(model: str, batch: int, seq: int, dtype: str, method: str):
    from dfx.errors import DfxError

    key = bucket_key(model, batch, seq, dtype, method)
    if key is None:
        return _concrete(model, batch, seq, dtype, method)
    sym_batch, sym_seq = key[3] is None, key[4] is None
    by_batch, by_seq, lifted = _sized_by(model, dtype)
    if sym_seq and lifted and not _lifted_fit(model, dtype, seq):
        return _concrete(model, batch, seq, dtype, method)  # its buffers are not seq rows at this seq
    if key in _BUCKETS:
        bucket = _BUCKETS[key]
        if bucket is not None:
            try:
                return bucket.graph_at(batch, seq)
            except DfxError:  # a guard fails at this size (GuardFailure), or its propagation does
                return _concrete(model, batch, seq, dtype, method)
        return _concrete(model, batch, seq, dtype, method)
    if sym_batch and sym_seq and batch == seq:
        return _concrete(
            model, batch, seq, dtype, method
        )  # batch == seq cannot tell the dims apart: the next point opens the bucket
    graph = _concrete(model, batch, seq, dtype, method)
    sc = _open_bucket(model, batch, seq, dtype, graph, sym_batch, sym_seq)
    if sc is None and sym_seq and lifted:  # its seq-sized buffers did not export as inputs: a bucket per seq
        _FIXED[(model, dtype)] = (by_batch, True, ())
        return graph
    if sc is not None and (sym_batch > sc.batch_symbolic or sym_seq > sc.seq_symbolic):
        # The export left a size fixed that was asked symbolic: no input has it where capture_symbolic
        # marks it (dim 0 batch, dim 1 seq). resnet-block's input is (B, C, S, S), its seq at dims 2
        # and 3: a bucket keyed as if seq were symbolic would hand seq 28's graph to seq 56. That size
        # is fixed for this model from now on: one bucket per value, as for a model sized by it.
        _FIXED[(model, dtype)] = (
            by_batch or sym_batch > sc.batch_symbolic,
            by_seq or sym_seq > sc.seq_symbolic,
            lifted if sc.seq_symbolic else (),
        )
        key = (model, dtype, method, None if sc.batch_symbolic else batch, None if sc.seq_symbolic else seq)
        if not (sc.batch_symbolic or sc.seq_symbolic):
            sc = None
    _BUCKETS[key] = None if sc is None else _Bucket(sc, batch, seq, graph)
    return graph


def _lifted_fit(model: str, dtype: str, seq: int) -> bool:
    """Whether the buffers :func:`_sized_by` lifts have ``seq`` rows (and nothing else differs) with
    ``model`` built at ``seq``, as at the two probe sizes: a table padded to a multiple of 8 rows has
    16 and 24 rows at seq 16 and 24, but 24 at seq 20, where the lifted export would give it 20.
    Two builds on the meta device per seq value, once per process."""
    key = (model, dtype, seq)
    if key not in _FITS:
        from dfx.capture.symbolic import seq_sized_buffers
        from dfx.models import resolve

        probe = 24 if seq == 16 else 16
        try:
            at_probe = resolve(model, batch=2, seq=probe, dtype=dtype).model
            got = seq_sized_buffers(at_probe, resolve(model, batch=2, seq=seq, dtype=dtype).model, probe, seq)
        except Exception:  # noqa: BLE001 - a size the model refuses: capture it concretely (which reports it)
            got = None
        _FITS[key] = got == _sized_by(model, dtype)[2]
    return _FITS[key]


def _open_bucket(model: str, batch: int, seq: int, dtype: str, graph: Any, sym_batch: bool, sym_seq: bool):
    """A symbolic capture aligned with ``graph`` (the concrete capture at these sizes), or None.

    Where ``graph`` was assembled from one captured block per layer kind (:func:`dfx.capture_spec`'s
    path for a model with a repeated layer list, every ``hf:`` decoder), so is the symbolic
    capture: the model is exported with its layer list cut the same way, aligned with the cut
    model's concrete capture, and each graph it gives is assembled as ``graph`` was
    (:class:`_Assembled`), which must then equal ``graph``.
    """
    from dfx.capture import capture, symbolic
    from dfx.capture.blocks import cut_layers
    from dfx.models import resolve

    if graph.capture_method != "export":
        return None  # export failed concretely; so would a symbolic one
    CAPTURES["symbolic"] += 1
    try:
        spec = resolve(model, batch=batch, seq=seq, dtype=dtype)
        assembled = any(k == "repeated_layer" for k, _ in graph.meta)
        with cut_layers(spec.model) if assembled else _whole() as cut:
            sc = symbolic.capture_symbolic(
                spec.model,
                spec.args,
                spec.kwargs,
                batch=batch,
                seq=seq,
                symbolic_batch=sym_batch,
                symbolic_seq=sym_seq,
                seq_buffers=_sized_by(model, dtype)[2] if sym_seq else (),
                name=spec.name,
            )
            if cut is None:
                return sc if sc.align(graph, batch, seq) else None
            cut_graph = capture(spec.model, spec.args, spec.kwargs, name=spec.name)  # the block as analyze cuts it
        if not sc.align(cut_graph, batch, seq):
            return None
        whole = _Assembled(sc, *cut)
        return whole if whole.graph_at(batch, seq) == graph else None
    except Exception:  # noqa: BLE001 - any failure of the symbolic path: this bucket is captured concretely
        return None


@contextmanager
def _whole():
    yield None


class _Assembled:
    """A symbolic capture of a model cut to one block per layer kind, its graphs assembled whole
    (:func:`dfx.inference.repeat.repeat_layers`, as :func:`dfx.inference.blocks.capture_blocks`)."""

    def __init__(self, sc: Any, prefix: str, template: tuple[int, ...]) -> None:
        self.sc, self.prefix, self.template = sc, prefix, template
        self.batch_symbolic, self.seq_symbolic = sc.batch_symbolic, sc.seq_symbolic

    def check_guards(self, batch: int, seq: int) -> None:
        self.sc.check_guards(batch, seq)

    def graph_at(self, batch: int, seq: int) -> Any:
        from dfx.inference.repeat import repeat_layers

        return repeat_layers(self.sc.graph_at(batch, seq), self.prefix, self.template)


class _Bucket:
    """A bucket's symbolic capture, and once its graphs fill a grid and agree at a check point, their
    polynomial text (:mod:`dfx.ir.polytext`): a point's graph from text, with no propagation.

    Each graph :meth:`graph_at` substitutes is kept as JSON text; once the kept sizes hold a full
    grid (two batch values where batch is symbolic, three seq values where seq is), the polynomial
    through them is checked against the next substituted graph, off the grid: equal text, and every
    later point is interpolated; any difference (an integer of higher degree, or not a polynomial),
    and the bucket substitutes every point, as before. An interpolated point must pass the export's
    ranges and guards as a substituted one does (:meth:`SymbolicCapture.check_guards`); one whose
    integers come out fractional is substituted.
    """

    def __init__(self, sc: Any, batch: int, seq: int, graph: Any) -> None:
        self.sc = sc
        self.sizes = (("batch",) if sc.batch_symbolic else ()) + (("seq",) if sc.seq_symbolic else ())
        self.samples: dict[tuple[int, ...], str] = {}
        self.template: Any = None  # poly_text's function once built; checked when self.trusted
        self.trusted: bool | None = None  # None: not yet decided; False: never interpolate
        self._keep(batch, seq, graph)

    def _point(self, batch: int, seq: int) -> tuple[int, ...]:
        return tuple(batch if s == "batch" else seq for s in self.sizes)

    def _grid(self) -> list[list[int]] | None:
        """Per symbolic size, the grid values that make a full grid with the samples, or None."""
        from itertools import combinations, product

        values = [sorted({p[d] for p in self.samples}) for d in range(len(self.sizes))]
        choices = [list(combinations(v, _GRID[s])) for v, s in zip(values, self.sizes)]
        for axes in product(*choices):
            if all(g in self.samples for g in product(*axes)):
                return [list(a) for a in axes]
        return None

    def _keep(self, batch: int, seq: int, graph: Any) -> None:
        from dfx.ir.polytext import NotPolynomial, poly_text

        text = graph.to_json()
        point = self._point(batch, seq)
        if self.template is not None and self.trusted is None:  # the check point, off the grid
            try:
                self.trusted = self.template(*point) == text
            except NotPolynomial:
                self.trusted = False
            return
        self.samples[point] = text
        grid = self._grid() if self.trusted is None else None
        if grid is not None:
            try:
                self.template = poly_text(self.samples, grid)
            except NotPolynomial:
                self.trusted = False

    def graph_at(self, batch: int, seq: int) -> Any:
        """The graph at these sizes: interpolated where trusted, else substituted (and kept)."""
        from dfx.ir.polytext import NotPolynomial, graph_of_text

        if self.trusted:
            self.sc.check_guards(batch, seq)  # GuardFailure (a DfxError): the caller captures concretely
            try:
                graph = graph_of_text(self.template(*self._point(batch, seq)))
            except NotPolynomial:
                pass
            else:
                CAPTURES["interpolated"] += 1
                return graph
        graph = self.sc.graph_at(batch, seq)
        CAPTURES["substituted"] += 1
        if self.trusted is None and self._point(batch, seq) not in self.samples:
            self._keep(batch, seq, graph)
        return graph
