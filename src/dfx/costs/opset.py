"""Coverage of an operator set (torch's Core ATen opset) by the cost rules.

PyTorch names a stable set of about 190 aten overloads, the *Core ATen opset*, to which
``torch.export`` graphs decompose (``run_decompositions()``) and which a backend has to implement
(https://docs.pytorch.org/docs/stable/torch.compiler_ir.html; the ops carry ``torch.Tag.core`` in
``native_functions.yaml``). This module is torch-free: it is handed the op names
(:func:`dfx.capture.opset.core_aten_ops` lists them from the installed torch) and says, per op,
which rule costs it and where that rule is an approximation, why.

``OPSET_NOTES`` holds the reasons: ops whose cost cannot be a closed form of their input shapes
(data-dependent output shapes, random number generation, host synchronisation) are costed by
their bytes only, and the note says so. An op with neither a rule nor a note is *missing*; a test
holds that list empty.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dfx.costs.registry import REGISTRY, Registry
from dfx.schema.ids import OPSET_COVERAGE_SCHEMA

__all__ = ["OPSET_NOTES", "OpCoverage", "OpsetCoverage", "opset_coverage"]

_RANDOM = (
    "random: bytes written only; the generator's own arithmetic (Philox 4x32-10 counter rounds on "
    "GPUs, Mersenne Twister on CPU) is not a closed form dfx counts"
)

# Why an op's rule is bytes only or otherwise not a closed form of its input shapes, keyed by packet.
OPSET_NOTES: dict[str, str] = {
    "aten.nonzero": (
        "data-dependent output shape: costed as a copy of the captured output, whose row count is "
        "the tracing hint of an unbacked size (the true count is known only at run time)"
    ),
    "aten._local_scalar_dense": (
        "Tensor.item(): one element copied to the host (bytes only); the device synchronisation it "
        "forces is the runtime's per-op latency, not a FLOP or byte count"
    ),
    "aten.rand": _RANDOM,
    "aten.randn": _RANDOM,
    "aten.randperm": _RANDOM + "; randperm's shuffle is counted as its output bytes",
    "aten.empty": "allocation only: 0 FLOPs, 0 bytes (nothing is read or written)",
    "aten.empty_strided": "allocation only: 0 FLOPs, 0 bytes (nothing is read or written)",
    "aten.sym_numel": "symbolic-shape metadata: no work on the device",
    "aten.sym_size": "symbolic-shape metadata: no work on the device",
    "aten.sym_stride": "symbolic-shape metadata: no work on the device",
    "aten.sym_storage_offset": "symbolic-shape metadata: no work on the device",
    "aten.sym_is_contiguous": "symbolic-shape metadata: no work on the device",
}


@dataclass(frozen=True)
class OpCoverage:
    """One op of the opset: the rule that costs it (its key and module), or ``None``; a note or ``""``."""

    op: str
    rule_key: str | None
    rule_module: str | None
    category: str | None
    note: str

    @property
    def missing(self) -> bool:
        """Neither a rule nor a documented reason."""
        return self.rule_key is None and not self.note

    def to_dict(self) -> dict[str, object]:
        return {
            "op": self.op,
            "rule": self.rule_key,
            "module": self.rule_module,
            "category": self.category,
            "note": self.note,
        }


@dataclass(frozen=True)
class OpsetCoverage:
    """Per-op coverage of an opset, sorted by op name."""

    name: str
    ops: tuple[OpCoverage, ...]

    @property
    def covered(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if o.rule_key is not None)

    @property
    def noted(self) -> tuple[OpCoverage, ...]:
        """Ops whose rule (or its absence) has a documented reason."""
        return tuple(o for o in self.ops if o.note)

    @property
    def missing(self) -> tuple[OpCoverage, ...]:
        return tuple(o for o in self.ops if o.missing)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": OPSET_COVERAGE_SCHEMA,
            "opset": self.name,
            "ops": len(self.ops),
            "covered": len(self.covered),
            "noted": len(self.noted),
            "missing": [o.op for o in self.missing],
            "per_op": [o.to_dict() for o in self.ops],
        }


def opset_coverage(ops: Iterable[str], *, name: str = "core_aten", registry: Registry | None = None) -> OpsetCoverage:
    """Which rule covers each op of ``ops`` (full overload names, ``"aten.add.Tensor"``).

    Parameters
    ----------
    ops
        Op overload names; :func:`dfx.capture.opset.core_aten_ops` gives torch's Core ATen opset.
    name
        The opset's name, for the report.
    registry
        The rules to look in (default: dfx's).

    Examples
    --------
    >>> cov = opset_coverage(["aten.mm.default", "aten.nonzero.default", "aten.no_such_op.default"])
    >>> [(o.op, o.rule_key, o.missing) for o in cov.ops]  # doctest: +NORMALIZE_WHITESPACE
    [('aten.mm.default', 'aten.mm', False), ('aten.no_such_op.default', None, True),
     ('aten.nonzero.default', 'aten.nonzero', False)]
    >>> cov.noted[0].note.startswith("data-dependent output shape")
    True
    """
    registry = registry or REGISTRY
    rows = []
    for op in sorted(set(ops)):
        rule = registry.rule_for(op)
        packet = ".".join(op.split(".")[:2])
        rows.append(
            OpCoverage(
                op,
                rule.key if rule else None,
                rule.fn.__module__.rsplit(".", 1)[-1] if rule else None,
                rule.category.value if rule else None,
                OPSET_NOTES.get(op, OPSET_NOTES.get(packet, "")),
            )
        )
    return OpsetCoverage(name, tuple(rows))
