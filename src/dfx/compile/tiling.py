"""The tiling pass: cut each kernel into tiles that fit one core's on-chip memory.

Every target tiles a kernel into independent work items, each held in one core's on-chip memory:

- GPUs (a profile with a ``simt`` section): every GEMM, pointwise and reduction kernel becomes the
  Triton program Inductor would launch (:func:`dfx.arch.gpu.plan.kernel_plan`, docs/gpu.md: its
  configs, blocks, waves and time); attention and memory kernels stay one tile there.
- GEMMs (and convolutions, as implicit GEMMs) elsewhere: an output-stationary ``(tm, tn, tk)`` tile
  (:mod:`dfx.arch.memory.tiling`): the tile with the least off-chip traffic whose working set fits
  one core's scratchpad (Spyre's 2 MB LX, a TPU's VMEM, Groq's and Cerebras' SRAM), with sides that
  are multiples of the matrix unit (8 on Spyre, 128 on a TPU v4/v5e MXU, 320 on Groq), among the
  tiles that give every core work where the GEMM is big enough (``choose_tile``).
- Attention: a flash-attention block of ``BLOCK_M`` query rows per (batch, head), the whole key
  sequence streamed through (FlashAttention-2: Dao 2023, Algorithm 1).
- Reductions: whole rows (``rnumel`` elements each), as many rows per tile as fit.
- Pointwise and memory kernels: blocks of elements, an even split over the cores, capped by the
  scratchpad.

Each kernel gets ``tiles`` (work items, one core each: on Groq a 320-wide MXM tile spans the 20
superlanes of 16 lanes, so it counts 20) and ``tile_shape``, and ``tile_traffic_bytes``: the off-chip traffic its
tiling implies (a GEMM re-reads A once per column block and B once per row block). ``offchip_bytes``
stays each tensor once, so eager >= compiled >= compulsory holds; the difference is what a cache
(a GPU's L2) must catch or a scratchpad machine must move again.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from functools import lru_cache, partial

from dfx.compile.dataflow import dataflow
from dfx.memo import weak_memo
from dfx.compile.ops import OpInfo
from dfx.compile.passes import Pass, PassResult
from dfx.compile.program import Kernel, KernelKind, Program
from dfx.costs.record import Category, CostedGraph, CostedNode
from dfx.costs.terms import FMA_FLOPS, gemm_operands, gemm_shape
from dfx.hardware import HardwareProfile

__all__ = ["CoreMemory", "clear_tile_choices", "core_memory", "gemm_of", "tile_kernel", "tiling_pass_for"]

GPU_XBLOCK = 1024  # Inductor's largest pointwise XBLOCK (triton_heuristics pointwise: max block 1024 per program)
FLASH_BLOCK_M = 128  # FlashAttention-2 query rows per thread block (Dao 2023, section 3.3; Br = 128 on A100/H100)
_UNBOUNDED_BYTES = 1e30  # a profile with no on-chip capacity: tiles limited by the matrix unit and the cores only
_DOUBLE_BUFFER = 2  # a streaming tile holds the block being computed and the next being loaded


_TILING_MODULE = None


def _tiling():
    """:mod:`dfx.arch.memory.tiling`, imported on first use: ``dfx.arch``'s package imports the roofline,
    which imports this stage, so a module-level import would be circular (kept once imported: an
    import statement costs a look-up per call, and a GEMM kernel's traffic asks for it on every profile)."""
    global _TILING_MODULE
    if _TILING_MODULE is None:
        from dfx.arch.memory import tiling

        _TILING_MODULE = tiling
    return _TILING_MODULE


@dataclass(frozen=True)
class CoreMemory:
    """What tiling needs of a profile: one core's on-chip bytes, the core count, the matrix-unit side."""

    per_core_bytes: float | None  # None: the profile gives no on-chip capacity
    cores: int
    granule: int  # tile sides of a GEMM are multiples of this (the matrix array's side)
    level: str
    span: int = 1  # cores one matrix-unit tile spans (Groq: a 320-wide MXM over 20 superlanes of 16 lanes)
    simt: bool = False  # a SIMT machine's: elementwise kernels in Triton's XBLOCK, not a share per core


def core_memory(profile: HardwareProfile, simt: bool = False) -> CoreMemory:
    """One core's on-chip memory: the on-chip level's capacity over its instances.

    GPU (``simt``, the target's :attr:`dfx.targets.Target.simt`): the on-chip level closest to compute,
    shared memory per SM (``SMEM`` capacity / SMs); TPU: VMEM (or CMEM on v4); Spyre: 2 MB LX per
    core; Groq: SRAM per slice; Cerebras: SRAM per core (the profile's on-chip level). Where the
    profile gives no on-chip capacity (TPU v6e: VMEM not published), ``per_core_bytes`` is ``None``.
    """
    levels = [lv for lv in profile.memory if lv.on_chip and lv.capacity_bytes]
    level = profile.on_chip_level() if not simt else None
    if level is None and levels:
        level = min(levels, key=lambda lv: lv.capacity_per_instance_bytes or math.inf)  # closest to compute
    cores = profile.compute.usable_cores or profile.compute.cores or 1
    granule = profile.compute.array_rows or 1
    lanes = profile.compute.lanes_per_core
    span = max(1, min(cores, (profile.compute.array_cols or 1) // lanes)) if lanes else 1
    if level is None:
        return CoreMemory(None, cores, granule, "none", span, simt)
    return CoreMemory(level.capacity_per_instance_bytes, cores, granule, level.name, span, simt)


def gemm_of(node: CostedNode):  # -> dfx.arch.memory.tiling.Gemm | None
    """The GEMM a matmul node runs: ``batch`` x ``[M, K] @ [K, N]`` from its output and its FLOPs.

    A bmm whose one operand is the same matrix for every batch entry (an ``expand``ed weight, stride 0)
    is one GEMM with the batch folded into its rows (:func:`dfx.costs.terms.gemm_shape`).

    A convolution is an implicit GEMM: ``M = N * prod(out spatial)``, ``N = C_out``, ``K`` from the
    FLOPs (``C_in / G * prod(kernel)``). Returns ``None`` for a node with no contraction.
    """
    matmul = [c for c in node.calls if c.category is Category.MATMUL]
    if not matmul:
        return None
    call = max(matmul, key=lambda c: c.cost.flops)
    flops = dict(call.flops_by_category).get(Category.MATMUL.value, call.cost.flops)
    aten = next((a for a in node.node.aten_calls if a.op == call.op), None)
    out = (
        aten.outputs[0] if aten is not None and aten.outputs else (node.node.outputs[0] if node.node.outputs else None)
    )
    if out is None or out.ndim < 1 or flops <= 0:
        return None
    if "conv" in call.op and out.ndim >= 3:
        m, n, batch = out.shape[0] * math.prod(out.shape[2:]), out.shape[1], 1
    elif any(b in call.op for b in ("bmm", "baddbmm", "matmul")) and out.ndim >= 3:
        m, n, batch = out.shape[-2], out.shape[-1], math.prod(out.shape[:-2])
        operands = gemm_operands(aten) if aten is not None else None
        dims = gemm_shape(*operands) if operands is not None else None
        if dims is not None and dims[3] == 1:  # an operand broadcast over the batch (stride 0): one GEMM
            m, n, batch = dims[0], dims[2], 1
    else:
        m, n, batch = math.prod(out.shape[:-1]), out.shape[-1], 1
    k = max(1, round(flops / (FMA_FLOPS * batch * m * n)))
    return _tiling().Gemm(m=m, k=k, n=n, elem_bytes=out.itemsize, batch=batch, name=node.name)


def _main_node(kernel: Kernel, ops: dict[str, OpInfo]) -> str:
    """The node that shapes the kernel's tiles: its GEMM, else its largest reduction, else its largest op."""
    nodes = [n for n in kernel.nodes if n in ops]
    extern = [n for n in nodes if ops[n].extern]
    if extern:
        return extern[0]
    return max(nodes, key=lambda n: (ops[n].rnumel > 1, ops[n].numel * ops[n].rnumel))


class _GraphShapes:
    """What tiling reads of one costed graph's kernels, which depends on the graph alone: a kernel's main
    node (:func:`_main_node`, from its node names) and the GEMM a node runs (:func:`gemm_of`).

    Every profile tiles the same graph's kernels (six in the bench's sweep, and each fused program's
    kernels recur on the profiles sharing its fusion), so each is worked out once per graph.
    """

    __slots__ = ("ops", "_costed", "main", "gemms", "plan_shapes", "tile_facts")

    def __init__(self, costed: CostedGraph, ops: dict[str, OpInfo]) -> None:
        # weakly: _SHAPES keeps this beside a weak reference to the graph, and a strong one here kept
        # every graph ever tiled alive (a 2,048-token generation grew by a decode step's graph, about
        # 15 MiB, per KV length evaluated)
        self._costed, self.ops = weakref.ref(costed), ops
        self.main: dict[tuple[str, ...], str] = {}
        self.gemms: dict[str, object] = {}
        self.plan_shapes: dict[tuple, tuple | None] = {}  # (kind, nodes) -> dfx.arch.gpu.plan.kernel_shape
        self.tile_facts: dict[tuple[str, ...], tuple] = {}  # nodes -> facts()

    @property
    def costed(self) -> CostedGraph:
        """The graph (alive while it is tiled: :func:`_shapes` is asked with it)."""
        return self._costed()

    def plan_shape(self, kernel: Kernel, kernel_shape) -> tuple | None:
        """``kernel_shape(kind, nodes)`` of ``kernel`` (:func:`dfx.arch.gpu.plan.kernel_shape`), once per
        graph: both GPU profiles of a sweep tile the same fused kernels."""
        key = (kernel.kind, kernel.nodes)
        shape = self.plan_shapes.get(key, self)
        if shape is self:
            costed = self.costed
            shape = self.plan_shapes[key] = kernel_shape(kernel.kind.value, [costed[n] for n in kernel.nodes])
        return shape

    def facts(self, kernel: Kernel) -> tuple[CostedNode, OpInfo, object, int]:
        """What :func:`_tile_kernel` reads of a kernel's nodes, once per graph (every profile tiles the
        same kernels): its main node, that node's op, its GEMM (``None`` unless the op is extern) and
        its output's element bytes (4 without an output)."""
        facts = self.tile_facts.get(kernel.nodes)
        if facts is None:
            main = self.main_node(kernel)
            node, op = self.costed[main], self.ops[main]
            itemsize = node.node.outputs[0].itemsize if node.node.outputs else 4
            facts = self.tile_facts[kernel.nodes] = (node, op, self.gemm(main) if op.extern else None, itemsize)
        return facts

    def main_node(self, kernel: Kernel) -> str:
        main = self.main.get(kernel.nodes)
        if main is None:
            main = self.main[kernel.nodes] = _main_node(kernel, self.ops)
        return main

    def gemm(self, name: str):  # -> dfx.arch.memory.tiling.Gemm | None
        if name not in self.gemms:
            self.gemms[name] = gemm_of(self.costed[name])
        return self.gemms[name]


# id(costed) -> (weak reference to it, its shapes): keyed by the costed graph's identity (a costed graph
# is frozen, its nodes and their data flow never change), checked through the weak reference so a
# recycled id never answers for another graph; cleared by clear_tile_choices.
_SHAPES: dict[int, tuple[weakref.ref, _GraphShapes]] = {}


def _shapes(costed: CostedGraph) -> _GraphShapes:
    return weak_memo(_SHAPES, costed, lambda c: _GraphShapes(c, dataflow(c).ops))


def _tile_gemm(kernel: Kernel, gemm, mem: CoreMemory) -> Kernel:
    choice = _choose(gemm.m, gemm.k, gemm.n, gemm.elem_bytes, gemm.batch, mem.per_core_bytes, mem.cores, mem.granule)
    tm, tn, tk = choice.tm, choice.tn, choice.tk
    tiles = gemm.batch * math.ceil(gemm.m / tm) * math.ceil(gemm.n / tn) * mem.span
    return kernel.with_(tiles=tiles, tile_shape=(tm, tn, tk), tile_traffic_bytes=_gemm_traffic(kernel, gemm, tm, tn))


def _gemm_traffic(kernel: Kernel, gemm, tm: int, tn: int) -> int:
    """The kernel's off-chip bytes plus the re-reads its GEMM's (tm, tn) tile loop adds."""
    unique = gemm.batch * gemm.elem_bytes * (gemm.m * gemm.k + gemm.k * gemm.n + gemm.m * gemm.n)
    traffic = gemm.batch * gemm.elem_bytes * _tiling().offchip_elements(gemm.m, gemm.k, gemm.n, tm, tn)
    return kernel.offchip_bytes + max(0, traffic - unique)


@lru_cache(maxsize=4096)
def _choose(m: int, k: int, n: int, elem_bytes: int, batch: int, per_core_bytes, cores: int, granule: int):
    """``choose_tile`` of the GEMM on one core's memory, cached by the numbers it reads (a model's layers
    repeat the same GEMMs, and sizes of a sweep repeat them across graphs); plain numbers as the key, so a
    hit builds no record and hashes no dataclass."""
    tiling = _tiling()
    machine = tiling.Machine(per_core_bytes or _UNBOUNDED_BYTES, cores, 1.0, 1.0, granule, granule, granule)
    return tiling.choose_tile(tiling.Gemm(m=m, k=k, n=n, elem_bytes=elem_bytes, batch=batch), machine)


def clear_tile_choices() -> None:
    """Forget every scratchpad tile chosen in this process, and every graph's kernel shapes (benchmarks
    time points as if seen for the first time)."""
    _choose.cache_clear()
    _SHAPES.clear()
    _tiling().clear_sides()


def _tile_attention(kernel: Kernel, node: CostedNode, mem: CoreMemory) -> Kernel:
    # q: [B, H, S_q, D]; one tile = BLOCK_M query rows of one (batch, head), K and V streamed through
    q = next((c.inputs[0] for c in node.node.aten_calls if c.inputs), None)
    if q is None or q.ndim < 2:
        return kernel.with_(tiles=1, tile_shape=(), tile_traffic_bytes=kernel.offchip_bytes)
    s_q, d = q.shape[-2], q.shape[-1]
    heads = math.prod(q.shape[:-2])
    block = min(FLASH_BLOCK_M, s_q)
    if mem.per_core_bytes is not None:  # q block, a k and a v block (double-buffered) and the score block
        while (
            block > 8 and q.itemsize * (block * d + _DOUBLE_BUFFER * 2 * block * d + block * block) > mem.per_core_bytes
        ):
            block //= 2
    tiles = heads * math.ceil(s_q / block)
    return kernel.with_(tiles=tiles, tile_shape=(block, block, d), tile_traffic_bytes=kernel.offchip_bytes)


def _tile_elementwise(kernel: Kernel, op: OpInfo, elem_bytes: int, mem: CoreMemory) -> Kernel:
    rows, r = (op.numel, op.rnumel) if op.rnumel > 1 else (op.numel, 1)
    total = rows * r
    if mem.simt:
        per_tile = GPU_XBLOCK
    else:
        per_tile = math.ceil(total / mem.cores)  # every core takes a share
        if mem.per_core_bytes is not None:  # an input and an output block, double-buffered
            per_tile = min(per_tile, max(1, int(mem.per_core_bytes // (_DOUBLE_BUFFER * 2 * elem_bytes))))
    rows_per_tile = max(1, per_tile // r)  # whole rows: a reduction needs its row in one place
    tiles = math.ceil(rows / rows_per_tile)
    shape = (min(rows, rows_per_tile), r) if r > 1 else (min(total, per_tile),)
    return kernel.with_(tiles=tiles, tile_shape=shape, tile_traffic_bytes=kernel.offchip_bytes)


def tile_kernel(
    kernel: Kernel, costed: CostedGraph, ops: dict[str, OpInfo], mem: CoreMemory, profile: HardwareProfile
) -> Kernel:
    """``kernel`` with its tiles, tile shape and tiled traffic on ``profile`` (see the module docstring)."""
    return _tile_kernel(
        kernel, _shapes(costed) if ops is dataflow(costed).ops else _GraphShapes(costed, ops), mem, profile
    )


def _tile_kernel(kernel: Kernel, shapes: _GraphShapes, mem: CoreMemory, profile: HardwareProfile) -> Kernel:
    kind = kernel.kind
    if kind is _COLLECTIVE or not kernel.nodes:
        return kernel
    node, op, gemm, itemsize = shapes.facts(kernel)
    if kind is _ATTENTION or op.kind is _ATTENTION:
        return _tile_attention(kernel, node, mem)
    if gemm is not None:
        return _tile_gemm(kernel, gemm, mem)
    return _tile_elementwise(kernel, op, itemsize, mem)


_COLLECTIVE, _ATTENTION = KernelKind.COLLECTIVE, KernelKind.ATTENTION


def _gpu_tiles(program: Program, costed: CostedGraph, profile: HardwareProfile) -> PassResult:
    """GPUs: each GEMM, pointwise and reduction kernel as the Triton program Inductor would launch.

    :func:`dfx.arch.gpu.plan.kernel_plan` (docs/gpu.md) gives the grid's program count, the blocks
    and the kernel's time from its waves. Attention, memory and collective kernels stay one tile.
    """
    from dfx.arch.gpu.plan import kernel_shape, plan_of_shape, profile_plans

    shapes = _shapes(costed)
    kernels, tiled, cache, GEMM = [], 0, profile_plans(profile), KernelKind.GEMM
    for k in program.kernels:
        plan = plan_of_shape(shapes.plan_shape(k, kernel_shape), k.offchip_bytes, k.flops, k.dtype, profile, cache)
        if plan is None:
            kernels.append(k.with_(tile_traffic_bytes=k.offchip_bytes))
            continue
        tiled += 1
        tile_shape, traffic = plan.tile_shape, k.offchip_bytes
        gemm = shapes.gemm(shapes.main_node(k)) if k.kind is GEMM else None
        if gemm is not None and len(tile_shape) == 3:
            traffic = _gemm_traffic(k, gemm, tile_shape[0], tile_shape[1])
        kernels.append(
            k.with_(tiles=plan.tiles, tile_shape=tile_shape, tile_time_s=plan.time_s, tile_traffic_bytes=traffic)
        )
    notes = (f"{tiled} of {len(kernels)} kernels as Triton programs (Inductor's configs, docs/gpu.md)",)
    return PassResult(program.with_(kernels=tuple(kernels)), modified=tiled > 0, notes=notes)


def tiling_pass_for(simt: bool) -> Pass:
    """The tiling pass of a SIMT target (``simt``: a profile with a ``simt`` section gets Triton programs,
    :func:`_gpu_tiles`) or of any other (scratchpad tiles per core); see the module docstring."""
    return Pass("tiling", partial(_tile_program, simt=simt))


def _tile_program(program: Program, costed: CostedGraph, profile: HardwareProfile, simt: bool) -> PassResult:
    """Tile every kernel of ``program`` for ``profile``'s cores (see the module docstring)."""
    if simt and profile.simt is not None:
        return _gpu_tiles(program, costed, profile)
    mem = core_memory(profile, simt)
    shapes = _shapes(costed)
    kernels = tuple(_tile_kernel(k, shapes, mem, profile) for k in program.kernels)
    traffic = sum(k.tile_traffic_bytes for k in kernels)
    per_core = (
        f"{mem.per_core_bytes / 1024:.0f} KiB of {mem.level} per core"
        if mem.per_core_bytes
        else "no on-chip capacity in the profile"
    )
    notes = (
        f"{sum(k.tiles for k in kernels)} tiles ({per_core}, {mem.cores} cores)",
        f"tiled off-chip traffic {traffic} B (re-reads included) vs {program.offchip_bytes} B of distinct tensors",
    )
    return PassResult(program.with_(kernels=kernels), modified=kernels != program.kernels, notes=notes)
