"""The compiled program: kernels (fused groups of graph nodes) and the record of every pass.

A :class:`Program` is what a machine's compiler hands to the hardware: a DAG of kernels, each a
group of costed-graph nodes that run as one unit (one GPU kernel launch, one XLA fusion, one region
of operators streaming into each other on a dataflow chip). Passes (:mod:`dfx.compile.passes`) turn
one program into the next and record what they changed as a :class:`PassRecord`.

Eager execution is the degenerate program: one kernel per node that does work, every tensor
through off-chip memory (:func:`dfx.compile.lower.lower_eager`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from typing import TYPE_CHECKING, Any

from dfx.frozen import copy_with
from dfx.schema.ids import COMPILE_SCHEMA

if TYPE_CHECKING:  # export records, imported where a record is built: a sweep never builds one
    from dfx.schema.analysis import StageRecord as StageDoc  # the document's record of a pass
    from dfx.schema.compile import CompileDoc, CompileKernelRecord

__all__ = ["SCHEMA", "Kernel", "KernelKind", "Program", "PassRecord"]

SCHEMA = COMPILE_SCHEMA


class KernelKind(str, Enum):
    """What a kernel mainly does; decides which fusion rules and which timing model apply."""

    GEMM = "gemm"  # a library contraction (mm, bmm, addmm, linear, conv) and what is fused into it
    ATTENTION = "attention"  # a fused attention kernel (SDPA / flash attention)
    POINTWISE = "pointwise"  # elementwise ops only
    REDUCTION = "reduction"  # softmax, norms, sums, with their pointwise prologue and epilogue
    MEMORY = "memory"  # copies, concatenation, gathers, embedding lookups
    COLLECTIVE = "collective"  # all-reduce, all-gather, send/recv between chips

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Kernel:
    """One unit of compiled work: a group of graph nodes run together.

    Attributes
    ----------
    name : str
        Unique within the program (e.g. ``k3_addmm``).
    nodes : tuple of str
        The costed-graph node names it runs, in topological order. Zero-work nodes (views,
        placeholders) belong to no kernel.
    kind : KernelKind
    flops : int
        Sum of its nodes' FLOPs.
    offchip_bytes : int
        Bytes it moves across the off-chip level (HBM, DRAM) once fused: its external inputs,
        parameters and outputs that leave the kernel. Intermediates between fused nodes stay on chip.
    onchip_bytes : int
        Bytes its nodes move that stay on chip (the fused intermediates, scratchpad-resident tensors).
    deps : tuple of str
        Names of the kernels whose outputs it reads.
    dtype : str or None
        The dtype carrying most of its FLOPs (torch name, e.g. ``bfloat16``).
    tiles : int
        Independent tiles (work items) the tiling pass cut it into; 1 before tiling.
    tile_shape : tuple of int
        The shape of one tile (e.g. ``(BLOCK_M, BLOCK_N, BLOCK_K)`` for a GEMM); empty before tiling.
    cores : int
        Cores (SMs, TensorCores, PEs) the placement pass gave it; 1 before placement.
    chip : int
        The chip it is placed on (0 on one chip).
    reason : str
        Why these nodes form one kernel: the fusion rule and its source.
    tile_traffic_bytes : int
        Off-chip bytes its tiling implies, re-reads included (a GEMM tile loop re-reads A once per
        column block); 0 before tiling. ``offchip_bytes`` counts each tensor once.
    region : str
        On a dataflow chip, the streaming region it belongs to: kernels of one region pass their
        tensors on chip (``""`` elsewhere).
    tile_time_s : float or None
        Its time from its tiles' waves on the machine, per-kernel overhead included, where the
        tiling pass has a tile model for the target (the GPU's Triton programs, :mod:`dfx.arch.gpu`);
        ``None`` elsewhere.
    compute_share : float
        The fraction of its nodes' compute it does: 1 for a kernel running whole operators; a step of
        an operator the target's compiler splits into several kernels does its FLOPs' share
        (:mod:`dfx.compile.decompose`; several kernels then name one node). Not exported: the kernel's
        ``flops`` say it.
    """

    name: str
    nodes: tuple[str, ...]
    kind: KernelKind
    flops: int
    offchip_bytes: int
    onchip_bytes: int = 0
    deps: tuple[str, ...] = ()
    dtype: str | None = None
    tiles: int = 1
    tile_shape: tuple[int, ...] = ()
    cores: int = 1
    chip: int = 0
    reason: str = ""
    region: str = ""
    tile_time_s: float | None = None
    tile_traffic_bytes: int = 0
    compute_share: float = 1.0

    @property
    def bytes(self) -> int:
        """All bytes the kernel's nodes move, on chip and off."""
        return self.offchip_bytes + self.onchip_bytes

    @classmethod
    def of(cls, **values: Any) -> Kernel:
        """``Kernel(**values)`` (keywords only) without the frozen ``__init__``'s ``object.__setattr__`` per
        field: the compile stage makes a kernel per operator per fusion run. Omitted fields take their
        defaults; an unknown or missing field raises ``Kernel``'s own ``TypeError``."""
        if not (_KERNEL_REQUIRED <= values.keys() <= _KERNEL_FIELDS):
            return cls(**values)
        new = object.__new__(cls)
        new.__dict__.update(_KERNEL_DEFAULTS, **values)
        return new

    def with_(self, **changes: Any) -> Kernel:
        """A copy with ``changes`` applied (kernels are frozen).

        ``dataclasses.replace`` without its per-field walk: every pass copies every kernel, and a
        Kernel has no ``__post_init__``; an unknown field still raises replace's ``TypeError``.
        """
        if self.__class__ is not Kernel or not changes.keys() <= _KERNEL_FIELDS:
            return copy_with(self, changes)
        new = object.__new__(Kernel)  # copy_with, inlined: one copy per kernel, pass and profile
        fill = new.__dict__
        fill.update(self.__dict__)
        fill.update(changes)
        return new

    def to_record(self) -> CompileKernelRecord:
        """The document's kernel record (``kernels[]`` of ``dfx.compile/1``)."""
        from dfx.schema.compile import CompileKernelRecord

        return CompileKernelRecord(
            name=self.name,
            nodes=tuple(self.nodes),
            kind=self.kind.value,
            flops=self.flops,
            offchip_bytes=self.offchip_bytes,
            onchip_bytes=self.onchip_bytes,
            deps=tuple(self.deps),
            dtype=self.dtype,
            tiles=self.tiles,
            tile_shape=tuple(self.tile_shape),
            cores=self.cores,
            chip=self.chip,
            reason=self.reason,
            region=self.region,
            tile_time_s=self.tile_time_s,
            tile_traffic_bytes=self.tile_traffic_bytes,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


_KERNEL_FIELDS = frozenset(f.name for f in fields(Kernel))
_KERNEL_DEFAULTS = {f.name: f.default for f in fields(Kernel) if f.default is not MISSING}  # all immutable
_KERNEL_REQUIRED = _KERNEL_FIELDS - _KERNEL_DEFAULTS.keys()


@dataclass(frozen=True)
class PassRecord:
    """What one pass changed: the program's size after it, and notes a user can read."""

    name: str
    nodes: int  # graph nodes inside kernels after the pass
    kernels: int
    tiles: int  # total tiles over all kernels
    offchip_bytes: int  # total off-chip bytes after the pass
    modified: bool
    notes: tuple[str, ...] = ()

    def to_record(self) -> StageDoc:
        """The documents' stage record (``stages[]`` of ``dfx.compile/1`` and of ``program``)."""
        from dfx.schema.analysis import StageRecord as StageDoc  # the document's record of a pass

        return StageDoc(
            name=self.name,
            nodes=self.nodes,
            kernels=self.kernels,
            tiles=self.tiles,
            offchip_bytes=self.offchip_bytes,
            modified=self.modified,
            notes=tuple(self.notes),
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_dict()


@dataclass(frozen=True)
class Program:
    """A costed graph compiled for one profile: kernels in topological order, and each stage's record.

    ``target`` names the compiler whose rules were followed (``"inductor"`` for GPUs, ``"xla"`` for
    TPUs, ``"dataflow"`` for Groq, Cerebras and Spyre, ``"eager"`` for the uncompiled program).
    ``commitment`` is the profile's scheduling commitment (``static``: order and placement fixed at
    compile time; ``dynamic``: decided at run time).
    """

    graph_name: str
    profile_id: str
    target: str
    commitment: str
    kernels: tuple[Kernel, ...]
    stages: tuple[PassRecord, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def with_(self, **changes: Any) -> Program:
        """A copy with ``changes`` applied (programs are frozen): ``dataclasses.replace`` without its
        per-field walk, as :meth:`Kernel.with_` (every pass copies the program; no ``__post_init__``)."""
        return copy_with(self, changes)

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``; ``KeyError`` naming it if absent."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} in the program for {self.profile_id!r}")

    @property
    def offchip_bytes(self) -> int:
        return sum(k.offchip_bytes for k in self.kernels)

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.kernels)

    @property
    def node_count(self) -> int:
        return sum(len(k.nodes) for k in self.kernels)

    @property
    def tile_count(self) -> int:
        return sum(k.tiles for k in self.kernels)

    def kernel_of(self) -> dict[str, str]:
        """Graph node name -> the kernel that runs it."""
        return {n: k.name for k in self.kernels for n in k.nodes}

    def record(self, name: str, modified: bool, notes: tuple[str, ...] = ()) -> PassRecord:
        """This program's :class:`PassRecord` after the pass ``name``."""
        nodes = tiles = offchip = 0
        for k in self.kernels:  # node_count, tile_count and offchip_bytes in one walk
            nodes += len(k.nodes)
            tiles += k.tiles
            offchip += k.offchip_bytes
        record = object.__new__(PassRecord)  # PassRecord(...) without the frozen __init__'s setattr per field
        record.__dict__.update(
            name=name,
            nodes=nodes,
            kernels=len(self.kernels),
            tiles=tiles,
            offchip_bytes=offchip,
            modified=modified,
            notes=notes,
        )
        return record

    def to_record(self) -> CompileDoc:
        """The ``dfx.compile/1`` document as its record (``dfx.schema.compile``)."""
        from dfx.schema.compile import CompileDoc, CompileTotalsRecord

        return CompileDoc(
            schema=SCHEMA,
            graph_name=self.graph_name,
            profile=self.profile_id,
            target=self.target,
            commitment=self.commitment,
            stages=tuple(s.to_record() for s in self.stages),
            kernels=tuple(k.to_record() for k in self.kernels),
            totals=CompileTotalsRecord(
                kernels=len(self.kernels),
                nodes=self.node_count,
                tiles=self.tile_count,
                flops=self.flops,
                offchip_bytes=self.offchip_bytes,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``dfx.compile/1`` document (see ``docs/export-format.md``)."""
        return self.to_record().to_dict()
