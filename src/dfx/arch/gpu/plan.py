"""The GPU model as the compile stage uses it: a kernel's Triton tiles and its time from its waves.

Small pure functions of numbers and costed nodes (no :mod:`dfx.compile` import, so the compile stage
can call them without a cycle):

- :func:`gemm_plan`, :func:`pointwise_plan`, :func:`reduction_plan`: tiles (programs), tile shape,
  warps, occupancy, waves and time of one kernel;
- :func:`kernel_plan`: the plan of a fused kernel from its costed nodes, its kind and its off-chip
  bytes, or ``None`` where the model does not apply (attention, memory and collective kernels, a
  profile without a ``simt`` section).

A fused kernel's kind decides the model: ``gemm`` -> the Triton GEMM of each contraction,
elementwise epilogue taken as fused (Inductor's mm template epilogue); ``reduction`` -> an inner
reduction over the last dimension of its reduced node's first input; ``pointwise`` -> a 1-D kernel
over its last node's output elements. The fused kernel's off-chip bytes and FLOPs replace the
single-op ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

from dfx.arch.gpu.kernel import (
    GemmKernel,
    SimtKernel,
    autotune_gemm,
    autotune_pick,
    clear_launches,
    fitting_gemm_configs,
    gemm_kernel,
    gemm_kernels,
    pointwise_kernel,
    reduction_kernel,
    split_seconds,
)
from dfx.costs.record import Category, CostedNode
from dfx.costs.terms import gemm_operands, gemm_shape
from dfx.hardware import HardwareProfile

__all__ = [
    "TilePlan",
    "clear_gemm_plans",
    "gemm_plan",
    "kernel_plan",
    "kernel_shape",
    "plan_of_shape",
    "pointwise_plan",
    "profile_plans",
    "reduction_plan",
    "split_k_factor",
]

_PARTIAL_SUM_BYTES = 4  # split-K partial sums are fp32 (the accumulator's dtype)


@dataclass(frozen=True)
class TilePlan:
    """One GPU kernel as Triton would launch it: its programs (tiles), their shape, and its time."""

    kind: str  # "gemm", "pointwise" or "reduction"
    tiles: int  # programs in the grid
    tile_shape: tuple[int, ...]  # (BLOCK_M, BLOCK_N, BLOCK_K) or (XBLOCK,) or (XBLOCK, R0_BLOCK)
    num_warps: int
    blocks_per_sm: int
    waves: int
    time_s: float  # the waves plus the per-kernel overhead
    config: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tiles": self.tiles,
            "tile_shape": list(self.tile_shape),
            "num_warps": self.num_warps,
            "blocks_per_sm": self.blocks_per_sm,
            "waves": self.waves,
            "time_s": self.time_s,
            "config": self.config,
        }


def _from_gemm(k: GemmKernel) -> TilePlan:
    c = k.config
    return TilePlan(
        "gemm",
        k.programs,
        (c.block_m, c.block_n, c.block_k),
        c.num_warps,
        k.occupancy.blocks_per_sm,
        k.waves.count,
        k.time_s,
        c.to_dict(),
    )


def _from_simt(k: SimtKernel) -> TilePlan:
    return TilePlan(
        k.kind,
        k.waves.programs,
        k.block,
        k.config.num_warps,
        k.occupancy.blocks_per_sm,
        k.waves.count,
        k.time_s,
        k.config.to_dict(),
    )


def split_k_factor(output_tiles: int, k: int, block_k: int, sms: int) -> int:
    """How many slices a GEMM library cuts K into when its output tiles cannot fill the SMs.

    A skinny GEMM (decode: M of 1 to a few dozen rows) has fewer output tiles than SMs; cuBLAS and
    CUTLASS then split the K loop over several programs per output tile (split-K, or Stream-K's
    work-centric split) whose partial sums are reduced after, so that every SM streams its share of
    the weights. Sources: NVIDIA CUTLASS docs, "Efficient GEMM in CUDA" (parallelized reductions:
    split-K); Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
    Multiplication on the GPU", PPoPP 2023 (the decomposition cuBLAS ships for Ampere and Hopper).

    The factor fills the SMs, ``ceil(sms / output_tiles)``, but keeps each slice at least one
    ``block_k`` step long; 1 when the output tiles already fill the SMs.

    >>> split_k_factor(32, 4096, 64, 108)   # M = 1, N = 4096 in 128-wide tiles on an A100
    4
    >>> split_k_factor(512, 4096, 64, 132)  # a square GEMM fills the SMs by itself
    1
    >>> split_k_factor(8, 64, 64, 132)      # K is one block step: nothing to split
    1
    """
    if output_tiles >= sms:
        return 1
    return max(1, min(math.ceil(sms / output_tiles), k // block_k))


class _Same:
    """A profile in a cache key, by identity: hashing a whole profile is slow, and holding the object
    in the key keeps its id from being recycled for another profile."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


# gemm_plan is a pure function of its arguments, and a sweep asks it the same GEMM again and again
# (M = batch x seq recurs across sizes, layers recur across models): one autotune per GEMM and
# profile per process. Bounded: cleared when it reaches this many plans.
_GEMM_PLANS: dict[tuple, TilePlan] = {}
_GEMM_PLANS_MAX = 1 << 16


# id(profile) -> (the profile, its kernel plans by kind and numbers): kernel_plan's ``cache`` for a
# profile, kept for the process. A plan's key holds every number it reads (sizes, off-chip bytes, FLOPs,
# dtype), the rest is the profile (frozen; held in the entry so its id is not recycled), so a plan made
# for one graph answers any kernel of another with the same key (sizes of a sweep, models of one width).
_PROFILE_PLANS: dict[int, tuple[HardwareProfile, dict[tuple, TilePlan]]] = {}
_PROFILES_MAX = 256  # profiles with plans; beyond, the cache starts again


def profile_plans(profile: HardwareProfile) -> dict[tuple, TilePlan]:
    """The process's plan cache for ``profile``, to pass as :func:`kernel_plan`'s ``cache`` (bounded
    as the GEMM plans: emptied when it reaches as many plans)."""
    hit = _PROFILE_PLANS.get(id(profile))
    if hit is None or hit[0] is not profile:
        if len(_PROFILE_PLANS) >= _PROFILES_MAX:
            _PROFILE_PLANS.clear()
        hit = _PROFILE_PLANS[id(profile)] = (profile, {})
    if len(hit[1]) >= _GEMM_PLANS_MAX:
        hit[1].clear()
    return hit[1]


def clear_gemm_plans() -> None:
    """Forget every GEMM and kernel plan made in this process, and every config's occupancy (benchmarks
    time points as if seen for the first time); the TPU's GEMMs on its MXUs too
    (:func:`dfx.arch.systolic.tpu.clear_chip_gemms`)."""
    from dfx.arch.systolic.tpu import clear_chip_gemms

    _GEMM_PLANS.clear()
    _PROFILE_PLANS.clear()
    clear_launches()
    clear_chip_gemms()


def gemm_plan(
    m: int, k: int, n: int, dtype: str, profile: HardwareProfile, *, batch: int = 1, b_bytes: float | None = None
) -> TilePlan:
    """The GEMM as the compile stage runs it: Inductor's Triton tiles, split over K when they cannot fill the SMs.

    Every config that fits an SM is timed as it would run, split-K included, and the fastest is
    kept (the autotuner's benchmark, with dfx's wave model as the clock).

    With ``s = split_k_factor(...)`` slices (:func:`split_k_factor`), the kernel launches ``s`` times
    the output tiles, each running ``1 / s`` of the K loop: every wave's compute and shared-memory
    roofs shrink by ``s``; its HBM bytes grow by the fp32 partial sums written and read back,
    ``2 * (s - 1) * batch * M * N * 4`` (NB: small beside the weights of a skinny GEMM).

    ``b_bytes``: B's bytes per element as stored, where they differ from ``dtype``'s (weight-only
    quantisation, a narrower KV cache: :func:`~dfx.arch.gpu.kernel.gemm_kernel`); ``None``: ``dtype``'s.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> p = gemm_plan(4096, 4096, 4096, "bf16", load_profile("h100"))
    >>> p.tiles, p.tile_shape                     # 4096/128 x 4096/256
    (512, (128, 256, 64))
    >>> gemm_plan(1, 4096, 4096, "bf16", load_profile("a100")).config["split_k"] > 1   # a decode GEMM
    True
    """
    key = (m, k, n, dtype, batch, _Same(profile), b_bytes)
    plan = _GEMM_PLANS.get(key)
    if plan is None:
        if len(_GEMM_PLANS) >= _GEMM_PLANS_MAX:
            _GEMM_PLANS.clear()
        plan = _GEMM_PLANS[key] = _autotuned_gemm(m, k, n, dtype, profile, batch, b_bytes)
    return plan


def _autotuned_gemm(
    m: int, k: int, n: int, dtype: str, profile: HardwareProfile, batch: int, b_bytes: float | None = None
) -> TilePlan:
    configs = fitting_gemm_configs(m, k, n, dtype, profile)
    if not configs:  # gemm_kernel names the problem
        return _split_over_k(gemm_kernel(m, k, n, profile, dtype=dtype, batch=batch, b_bytes=b_bytes), profile)
    # the autotuner times each config as it would run, split-K included, skipping those whose lower
    # bound cannot win (autotune_gemm: the same pick as timing them all); only the winner's plan is built
    kern, timed = autotune_gemm(
        m,
        k,
        n,
        profile,
        configs,
        dtype=dtype,
        batch=batch,
        split_of=lambda programs, block_k, sms: split_k_factor(programs, k, block_k, sms),
        partial_sum_bytes_per_element=_PARTIAL_SUM_BYTES,
        b_bytes=b_bytes,
    )
    return _split_over_k(kern, profile, timed)


def _autotuned_gemm_full(
    m: int, k: int, n: int, dtype: str, profile: HardwareProfile, batch: int, b_bytes: float | None = None
) -> TilePlan:
    """:func:`_autotuned_gemm` timing every config (the reference its pruning is tested against)."""
    configs = fitting_gemm_configs(m, k, n, dtype, profile)
    kernels = gemm_kernels(m, k, n, profile, configs, dtype=dtype, batch=batch, b_bytes=b_bytes)
    if not kernels:
        kernels = [gemm_kernel(m, k, n, profile, dtype=dtype, batch=batch, b_bytes=b_bytes)]
    timed = [_split_k(kern, profile) for kern in kernels]
    best = autotune_pick([(time_s, kern.config) for (_, time_s), kern in zip(timed, kernels)])
    return _split_over_k(kernels[best], profile, timed[best])


def _split_k(kern: GemmKernel, profile: HardwareProfile) -> tuple[int, float]:
    """The split-K factor of ``kern`` and its time split that way (its own time when not split)."""
    split = split_k_factor(kern.programs, kern.k, kern.config.block_k, kern.sms)
    if split == 1:
        return 1, kern.time_s
    partial_bytes = 2 * (split - 1) * kern.batch * kern.m * kern.n * _PARTIAL_SUM_BYTES
    roofs = ((w.compute_s, w.smem_s, w.hbm_s) for w in kern.wave_times)
    return split, split_seconds(
        roofs, split, partial_bytes, profile.off_chip_level().bandwidth_bytes_per_s, kern.overhead_s
    )


def _split_over_k(kern: GemmKernel, profile: HardwareProfile, timed: tuple[int, float] | None = None) -> TilePlan:
    split, time_s = _split_k(kern, profile) if timed is None else timed
    plan = _from_gemm(kern)
    if split == 1:
        return replace(plan, config={**plan.config, "split_k": 1})
    tiles = kern.programs * split
    return replace(
        plan,
        tiles=tiles,
        waves=math.ceil(tiles / (kern.sms * max(kern.occupancy.blocks_per_sm, 1))),
        time_s=time_s,
        config={**plan.config, "split_k": split},
    )


def pointwise_plan(numel: int, offchip_bytes: float, flops: float, dtype: str, profile: HardwareProfile) -> TilePlan:
    """A fused 1-D pointwise kernel over ``numel`` elements moving ``offchip_bytes``."""
    per_element = flops / numel if numel else 0.0
    return _from_simt(
        pointwise_kernel(numel, profile, dtype=dtype, flops_per_element=per_element, hbm_bytes=offchip_bytes)
    )


def reduction_plan(
    rows: int, cols: int, offchip_bytes: float, flops: float, dtype: str, profile: HardwareProfile
) -> TilePlan:
    """A fused inner reduction of ``rows`` rows of ``cols`` elements moving ``offchip_bytes``."""
    per_element = flops / (rows * cols)
    return _from_simt(
        reduction_kernel(rows, cols, profile, dtype=dtype, flops_per_element=per_element, hbm_bytes=offchip_bytes)
    )


_BATCHED_OPS = ("bmm", "baddbmm")  # their leading output dimension is a grid dimension, not rows
_BATCHED_PACKETS = frozenset(f"aten.{op}" for op in _BATCHED_OPS)


def _folded_dims(cn: CostedNode) -> tuple[int, int, int] | None:
    """``(M, N, 1)`` of a node's bmm when one operand is the same matrix for its whole batch (the weight
    ``expand``ed by torch's matmul: stride 0), else ``None`` (:func:`dfx.costs.terms.gemm_shape`)."""
    for call in cn.node.aten_calls:
        if call.packet in _BATCHED_PACKETS:
            operands = gemm_operands(call)
            dims = gemm_shape(*operands) if operands is not None else None
            return (dims[0], dims[2], 1) if dims is not None and dims[3] == 1 else None
    return None


def _gemm_dims(cn: CostedNode) -> tuple[int, int, int, int, float | None] | None:
    """``(M, K, N, batch, B bytes)`` of a contraction node, from its output shape and its matmul FLOPs.

    ``K = matmul FLOPs / (2 * output elements)`` (the cost rules' ``2*M*K*N``), so no second copy
    of the shape rules is needed. Rows: every leading output dimension flattened into M (Inductor
    views a linear's input as 2-D), except ``bmm``/``baddbmm`` whose leading dimensions are the
    batch (unless one operand is broadcast over it, stride 0: then one GEMM with the batch in M); a
    convolution's ``N`` is its output channels (dimension 1), ``M`` the rest (im2col). A batched
    matmul that reads the KV cache once per query head (``kv_reads = g``,
    :class:`dfx.inference.kv_reads.KVReadNode`) is ``g`` times the batch of ``M / g`` rows.
    B bytes: B's bytes per element as stored where :func:`dfx.costs.precision.apply_precision` priced
    the node's weight or KV-cache operand at another width (:func:`_stored_b_bytes`), else ``None``.
    """
    matmul = dict(cn.flops_by_category).get("matmul", 0)
    if not matmul or not cn.node.outputs or not cn.node.outputs[0].shape:
        return None
    shape = tuple(int(d) for d in cn.node.outputs[0].shape)
    numel = math.prod(shape)
    ops = " ".join(c.op for c in cn.node.aten_calls)
    if "convolution" in ops and len(shape) >= 3:
        n, batch = shape[1], 1
        m = numel // n
    elif any(f"aten.{op}." in ops for op in _BATCHED_OPS) and len(shape) >= 3:
        m, n, batch = shape[-2], shape[-1], math.prod(shape[:-2])
        folded = _folded_dims(cn)
        if folded is not None:  # an operand broadcast over the batch (stride 0): one GEMM, M = batch x rows
            m, n, batch = folded
        reads = getattr(cn, "kv_reads", 1)  # KV cache read per query head (dfx.inference.kv_reads)
        if reads > 1 and m % reads == 0:  # rows (g query heads x T) -> g GEMMs of T rows, each reading B
            m, batch = m // reads, batch * reads
    else:
        m, n, batch = numel // shape[-1], shape[-1], 1
    k = max(1, round(matmul / (2 * numel)))
    return m, k, n, batch, _stored_b_bytes(cn)


def _stored_b_bytes(cn: CostedNode) -> float | None:
    """Bytes per element of the node's B operand as stored (``PrecisionNode.b_operand_bits / 8``: 0.5 for
    int4 weights, 1 for an fp8 KV cache; a whole number as an ``int``), ``None`` where it is not re-priced.

    NB: the re-priced operand (a weight or the KV cache) is taken as B, as it is in every contraction
    dfx builds: a linear's ``x @ W^T``, a convolution's implicit GEMM, attention's ``q @ K^T`` and ``p @ V``.
    """
    bits = getattr(cn, "b_operand_bits", None)
    if bits is None:
        return None
    return bits // 8 if bits % 8 == 0 else bits / 8


def _reduced_shape(nodes: Sequence[CostedNode]) -> tuple[int, int] | None:
    for cn in nodes:
        if cn.category is Category.NORMALIZATION or any(
            "sum" in c.op or "mean" in c.op or "max" in c.op or "var" in c.op for c in cn.node.aten_calls
        ):
            for call in cn.node.aten_calls:
                if call.inputs and call.inputs[0].shape:
                    shape = call.inputs[0].shape
                    cols = int(shape[-1])
                    return max(1, math.prod(int(d) for d in shape) // max(cols, 1)), max(cols, 1)
    return None


def kernel_plan(
    kind: str,
    nodes: Sequence[CostedNode],
    offchip_bytes: float,
    flops: float,
    dtype: str | None,
    profile: HardwareProfile,
    cache: dict[tuple, TilePlan] | None = None,
) -> TilePlan | None:
    """The Triton plan of one compiled kernel on a GPU profile, or ``None`` where the model does not apply.

    Parameters
    ----------
    kind : str
        The compile stage's kernel kind (``"gemm"``, ``"pointwise"``, ``"reduction"``; others get ``None``).
    nodes : sequence of CostedNode
        The kernel's nodes, in order.
    offchip_bytes, flops : float
        The fused kernel's off-chip bytes and FLOPs.
    dtype : str or None
        The dtype carrying most of its FLOPs (``bfloat16`` when unknown).
    profile : HardwareProfile
        Returns ``None`` unless it has a ``simt`` section.
    cache : dict, optional
        Plans already made for ``profile``, keyed by kind and numbers: a model of 80 identical
        layers chooses each GEMM's config once. The caller owns it (one per profile).
    """
    if profile.simt is None or not nodes:
        return None
    return plan_of_shape(kernel_shape(kind, nodes), offchip_bytes, flops, dtype, profile, cache)


def kernel_shape(kind: str, nodes: Sequence[CostedNode]) -> tuple | None:
    """What :func:`kernel_plan` reads of a kernel's nodes, which depends on the graph alone (so every
    GPU profile evaluating one graph's program can share it): ``("gemm", ((M, K, N, batch, B bytes), ...))``,
    ``("reduction", (rows, cols))`` or ``("pointwise", numel)``; ``None`` where no plan applies."""
    if not nodes:
        return None
    if kind == "gemm":
        gemms = tuple(g for g in (_gemm_dims(cn) for cn in nodes) if g is not None)
        return ("gemm", gemms) if gemms else None
    if kind == "reduction":
        shape = _reduced_shape(nodes)
        if shape is not None:
            return "reduction", shape
        kind = "pointwise"
    if kind == "pointwise":
        return "pointwise", sum(spec.numel for spec in nodes[-1].node.outputs) or 1
    return None


def plan_of_shape(
    shape: tuple | None,
    offchip_bytes: float,
    flops: float,
    dtype: str | None,
    profile: HardwareProfile,
    cache: dict[tuple, TilePlan] | None = None,
) -> TilePlan | None:
    """:func:`kernel_plan` of a kernel whose :func:`kernel_shape` is ``shape`` (same parameters)."""
    if profile.simt is None or shape is None:
        return None
    dtype = dtype or "bfloat16"
    kind, dims = shape
    if kind == "gemm":
        plans = [
            _cached(
                cache, ("gemm", m, k, n, b, dtype, wb), lambda: gemm_plan(m, k, n, dtype, profile, batch=b, b_bytes=wb)
            )
            for m, k, n, b, wb in dims
        ]
        first = plans[0]
        if len(plans) == 1:
            return first
        return TilePlan(
            "gemm",
            sum(p.tiles for p in plans),
            first.tile_shape,
            first.num_warps,
            first.blocks_per_sm,
            sum(p.waves for p in plans),
            sum(p.time_s for p in plans),
            first.config,
        )
    if kind == "reduction":
        return _cached(
            cache,
            ("reduction", *dims, offchip_bytes, flops, dtype),
            lambda: reduction_plan(*dims, offchip_bytes, flops, dtype, profile),
        )
    return _cached(
        cache,
        ("pointwise", dims, offchip_bytes, flops, dtype),
        lambda: pointwise_plan(dims, offchip_bytes, flops, dtype, profile),
    )


def _cached(cache: dict[tuple, TilePlan] | None, key: tuple, make) -> TilePlan:
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]
