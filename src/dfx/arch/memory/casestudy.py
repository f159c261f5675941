"""Case study: one attention block through two machines (FlashAttention tiling on each).

Per machine, the on-chip budget M of one tile worker is the largest on-chip level's capacity
divided among ``max(instances, cores)`` (Spyre: 64 MB / 32 = 2 MB of LX per core; TPU v4: the
128 MiB CMEM shared by 2 TensorCores, 64 MiB each, VMEM being unpublished). The (batch, head)
pairs are dealt to the cores (SPMD, as Spyre's work division splits the batch first); each core
runs Algorithm 1 (:mod:`.flash`) with its own M. Block sides are rounded down to multiples of the
matrix array's side (at least one array side), and a contraction shorter than the array leaves
rows idle: the array's utilisation is ``min(1, d / array_rows)``, which scales the peak.

Time per machine = max(4*B*H*N^2*d / (peak * utilisation), off-chip bytes / off-chip bandwidth);
softmax's exponentials and the causal mask are ignored (the FLOP convention of docs/cost-model.md).
"""

from __future__ import annotations


import math
from dataclasses import dataclass
from typing import Any

from dfx.arch.memory.capacity import onchip_memory
from dfx.arch.memory.flash import flash_accesses_with_blocks, standard_accesses
from dfx.arch.memory.tiling import RooflineTime
from dfx.hardware import HardwareProfile
from dfx.ir import itemsize_bytes

__all__ = [
    "AttentionBlock",
    "AttentionOnChip",
    "attention_graph",
    "attention_on_chip",
    "compiler_stages",
    "render_case_study",
    "render_stages",
]

_MATMULS = 2  # S = Q K^T and O = P V, 2*N*N*d FLOPs each


@dataclass(frozen=True)
class AttentionBlock:
    """One attention block: ``batch`` x ``heads`` heads of N = ``seq`` tokens and size ``head_dim``."""

    seq: int = 4096
    heads: int = 16  # GPT-2 medium, the model of FlashAttention's Fig. 2
    head_dim: int = 64
    batch: int = 1
    dtype: str = "bfloat16"

    @property
    def flops(self) -> int:
        return _MATMULS * 2 * self.batch * self.heads * self.seq * self.seq * self.head_dim


@dataclass(frozen=True)
class AttentionOnChip(RooflineTime):
    """How one machine runs the block: blocks, what stays on chip, traffic, time."""

    hardware: str
    block: AttentionBlock
    onchip_level: str
    m_bytes: float
    array_side: int
    block_rows: int
    block_cols: int
    outer_steps: int
    working_set_bytes: int
    scores_bytes_per_head: int
    flash_offchip_bytes: int
    standard_offchip_bytes: int
    utilisation: float
    peak_flop_per_s: float
    offchip_bytes_per_s: float
    cores: int
    onchip_bandwidth_known: bool = True

    @property
    def compute_time_s(self) -> float:
        return self.block.flops / (self.peak_flop_per_s * self.utilisation)

    @property
    def memory_time_s(self) -> float:
        return self.flash_offchip_bytes / self.offchip_bytes_per_s

    @property
    def standard_memory_time_s(self) -> float:
        return self.standard_offchip_bytes / self.offchip_bytes_per_s

    def kept_on_chip(self) -> dict[str, int]:
        """Bytes of each on-chip buffer of Algorithm 1's inner step."""
        e, d, br, bc = itemsize_bytes(self.block.dtype), self.block.head_dim, self.block_rows, self.block_cols
        return {
            "K_j": bc * d * e,
            "V_j": bc * d * e,
            "Q_i": br * d * e,
            "O_i": br * d * e,
            "S_ij/P_ij": br * bc * e,
            "l_i, m_i": 2 * br * e,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": self.hardware,
            "onchip_level": self.onchip_level,
            "m_bytes": self.m_bytes,
            "array_side": self.array_side,
            "cores": self.cores,
            "block_rows": self.block_rows,
            "block_cols": self.block_cols,
            "outer_steps": self.outer_steps,
            "working_set_bytes": self.working_set_bytes,
            "kept_on_chip": self.kept_on_chip(),
            "scores_bytes_per_head": self.scores_bytes_per_head,
            "scores_fit_on_chip": self.scores_bytes_per_head <= self.m_bytes,
            "flash_offchip_bytes": self.flash_offchip_bytes,
            "standard_offchip_bytes": self.standard_offchip_bytes,
            "utilisation": self.utilisation,
            "compute_time_s": self.compute_time_s,
            "memory_time_s": self.memory_time_s,
            "standard_memory_time_s": self.standard_memory_time_s,
            "time_s": self.time_s,
            "bound": self.bound.value,
        }


def _round_to_array(value: int, side: int, cap: int) -> int:
    return min(cap, max(side, (value // side) * side))


def attention_on_chip(block: AttentionBlock, profile: HardwareProfile) -> AttentionOnChip:
    """FlashAttention tiling of ``block`` on ``profile`` (module docstring: the model)."""
    level = onchip_memory(profile)
    off = profile.off_chip_level()
    if level is None or off is None:
        from dfx.errors import DfxError

        raise DfxError(f"profile {profile.id!r} needs an on-chip level with a capacity and an off-chip bandwidth")
    cores = profile.compute.cores or 1
    e, n, d = itemsize_bytes(block.dtype), block.seq, block.head_dim
    m_bytes = level.capacity_bytes / max(level.instances, cores)
    m_elems = m_bytes / e
    side = profile.compute.array_rows or 1
    bc = _round_to_array(math.ceil(m_elems / (4 * d)), side, n)
    br = min(bc, d, n)  # Algorithm 1: B_r = min(B_c, d)
    tc = math.ceil(n / bc)
    per_head = flash_accesses_with_blocks(n, d, bc)
    heads = block.batch * block.heads
    working = e * (2 * bc * d + 2 * br * d + br * bc + 2 * br)
    return AttentionOnChip(
        profile.id,
        block,
        level.name,
        m_bytes,
        side,
        br,
        bc,
        tc,
        working,
        n * n * e,
        heads * per_head * e,
        heads * standard_accesses(n, d) * e,
        min(1.0, d / side),
        profile.peak(block.dtype).flop_per_s,
        off.bandwidth_bytes_per_s,
        cores,
        level.bandwidth_bytes_per_s is not None,
    )


def _mb(x: float) -> str:
    return f"{x / 1e6:,.2f} MB"


def _section(r: AttentionOnChip) -> list[str]:
    kept = ", ".join(f"{k} {_mb(v)}" for k, v in r.kept_on_chip().items())
    fit = "fits" if r.scores_bytes_per_head <= r.m_bytes else "does not fit"
    return [
        f"## {r.hardware}",
        "",
        f"- On-chip budget per core: {_mb(r.m_bytes)} of {r.onchip_level} ({r.cores} cores share the heads)"
        + ("." if r.onchip_bandwidth_known else "; its bandwidth is unpublished, so on-chip time is not modelled."),
        f"- Scores matrix per head: {r.block.seq} x {r.block.seq} = {_mb(r.scores_bytes_per_head)}, which {fit} on chip.",
        f"- Tiling: B_r x B_c = {r.block_rows} x {r.block_cols} score tiles (B_c a multiple of the "
        f"{r.array_side}x{r.array_side} array's side, B_r = min(B_c, d)), {r.outer_steps} outer step(s) over K/V; "
        f"array utilisation {r.utilisation:.0%} (head size {r.block.head_dim}).",
        f"- Kept on chip per step: {kept} (working set {_mb(r.working_set_bytes)}).",
        f"- Off-chip traffic: {_mb(r.flash_offchip_bytes)} with online softmax vs {_mb(r.standard_offchip_bytes)} "
        "for standard attention (S and P written and read back).",
        f"- Time, FlashAttention as one fused kernel at the usable peak (this section's model): compute "
        f"{r.compute_time_s * 1e3:.3f} ms, memory {r.memory_time_s * 1e3:.3f} ms "
        f"(standard: {r.standard_memory_time_s * 1e3:.3f} ms) -> {r.time_s * 1e3:.3f} ms, {r.bound}-bound.",
        "",
    ]


def _why(a: AttentionOnChip, b: AttentionOnChip) -> list[str]:
    lines = ["## Why they differ", ""]
    lines.append(
        f"- Capacity: {a.hardware} gives each core {_mb(a.m_bytes)}, {b.hardware} {_mb(b.m_bytes)} "
        f"({max(a.m_bytes, b.m_bytes) / min(a.m_bytes, b.m_bytes):.1f}x). FlashAttention's traffic is "
        f"Theta(N^2 d^2 / M): {a.outer_steps} vs {b.outer_steps} passes over Q and O."
    )
    lines.append(
        f"- Bandwidth: {a.offchip_bytes_per_s / 1e9:,.0f} GB/s vs {b.offchip_bytes_per_s / 1e9:,.0f} GB/s off chip; "
        f"moving the flash traffic takes {a.memory_time_s * 1e3:.3f} ms vs {b.memory_time_s * 1e3:.3f} ms."
    )
    lines.append(
        f"- Array size: {a.array_side}x{a.array_side} vs {b.array_side}x{b.array_side}; a head size of "
        f"{a.block.head_dim} fills {a.utilisation:.0%} vs {b.utilisation:.0%} of the array's rows, so the usable peak is "
        f"{a.peak_flop_per_s * a.utilisation / 1e12:,.1f} vs {b.peak_flop_per_s * b.utilisation / 1e12:,.1f} TFLOP/s."
    )
    lines.append(
        f"- Result (FlashAttention model): {a.hardware} is {a.bound}-bound at {a.time_s * 1e3:.3f} ms; "
        f"{b.hardware} is {b.bound}-bound at {b.time_s * 1e3:.3f} ms."
    )
    return lines


def render_case_study(results: list[AttentionOnChip], stages: list[dict[str, Any]] | None = None) -> str:
    """The markdown report: one section per machine, the differences between the first two, then
    (given :func:`compiler_stages`) the block through each compiler stage."""
    blk = results[0].block
    head = [
        "# Attention case study",
        "",
        f"One attention block: batch {blk.batch}, {blk.heads} heads, N = {blk.seq} tokens, head size "
        f"{blk.head_dim}, {blk.dtype}; {blk.flops / 1e9:,.1f} GFLOP in the two matmuls. Each machine runs "
        "FlashAttention (Dao et al. 2022, Algorithm 1): S and P exist only as tiles on chip, with an online softmax.",
        "",
    ]
    body = [line for r in results for line in _section(r)]
    tail = _why(results[0], results[1]) if len(results) > 1 else []
    staged = ["", render_stages(stages)] if stages else []
    return "\n".join(head + body + tail + staged) + "\n"


# -- the block through the compiler stages --------------------------------------------------------


def attention_graph(block: AttentionBlock):
    """The block as a graph (torch-free): x [B*N, H*d] -> q, k, v projections -> SDPA -> output projection.

    The four weights are graph inputs of ``[H*d, H*d]``; SDPA reads q, k, v as ``[B, H, N, d]``.
    """
    from dfx.ir import AtenCall, Edge, Graph, Node, TensorSpec

    e = block.heads * block.head_dim
    flat = TensorSpec((block.batch * block.seq, e), block.dtype)
    weight = TensorSpec((e, e), block.dtype)
    heads = TensorSpec((block.batch, block.heads, block.seq, block.head_dim), block.dtype)

    def mm(name: str, src: str, w: str) -> Node:
        return Node(
            name,
            "call_function",
            "aten.mm.default",
            inputs=(Edge(src), Edge(w)),
            outputs=(flat,),
            module_path=f"attn.{name}",
            aten_calls=(AtenCall("aten.mm.default", (flat, weight), (), (flat,)),),
        )

    nodes = [Node("x", "placeholder", "x", outputs=(flat,), input_kind="input")]
    nodes += [Node(w, "placeholder", w, outputs=(weight,), input_kind="input") for w in ("w_q", "w_k", "w_v", "w_o")]
    nodes += [mm("q", "x", "w_q"), mm("k", "x", "w_k"), mm("v", "x", "w_v")]
    sdpa = "aten.scaled_dot_product_attention.default"
    nodes.append(
        Node(
            "sdpa",
            "call_function",
            sdpa,
            inputs=(Edge("q"), Edge("k"), Edge("v")),
            outputs=(heads,),
            module_path="attn.sdpa",
            aten_calls=(AtenCall(sdpa, (heads, heads, heads), (), (heads,)),),
        )
    )
    nodes += [mm("o", "sdpa", "w_o"), Node("output", "output", "output", inputs=(Edge("o"),))]
    return Graph(name="attention-block", nodes=tuple(nodes))


def _level(profile: HardwareProfile) -> str:
    lv = profile.on_chip_level() or onchip_memory(profile)
    if lv is None:
        return "no on-chip level with a published capacity"
    per = lv.capacity_per_instance_bytes
    return (
        f"{lv.name} {_mb(lv.capacity_bytes)} ({_mb(per)} per core)"
        if lv.instances > 1
        else f"{lv.name} {_mb(lv.capacity_bytes)}"
    )


def _array(profile: HardwareProfile) -> str:
    c = profile.compute
    return (
        f"{c.array_rows}x{c.array_cols} {c.unit_kind or 'array'}"
        if c.array_rows and c.array_cols
        else "array size unpublished"
    )


# stage -> (what to compare, the hardware figure that decides it)
_CAUSES = {
    "lower": lambda p: "none: eager lowering is one kernel per operator on every machine",
    "fusion": lambda p: f"memory model {p.memory_model.value}, on chip {_level(p)}",
    "decompose": lambda p: "operators its compiler splits into kernels (dfx.compile.decompose)",
    "tiling": lambda p: f"per-core on-chip memory {_level(p)}, matrix unit {_array(p)}",
    "placement": lambda p: f"compute.cores = {p.compute.cores}",
    "schedule": lambda p: f"scheduling commitment {p.scheduling.commitment.value}",
}


def compiler_stages(block: AttentionBlock, profiles: list[HardwareProfile]) -> list[dict[str, Any]]:
    """Per compiler stage, each machine's program after it and the hardware figure behind it.

    Returns one entry per stage (``lower``, the target's passes, then ``evaluate``): ``stage``,
    ``machines`` (per profile id: ``kernels``, ``tiles``, ``offchip_bytes``, ``notes``, ``cause``)
    and ``differs`` (whether the stage changed the machines' programs differently, or for a
    different hardware reason).
    """
    from dfx.costs import annotate
    from dfx.roofline import evaluate
    from dfx.targets import compile_for

    costed = annotate(attention_graph(block))
    results = {p.id: evaluate(costed, p, execution_model="compiled", program=compile_for(costed, p)) for p in profiles}
    by_id = {p.id: p for p in profiles}
    # the longest pipeline first, so a pass only one target runs (Spyre's decompose) keeps its place
    pipelines = sorted((r.program.program.stages for r in results.values()), key=len, reverse=True)
    names = list(dict.fromkeys(s.name for stages in pipelines for s in stages))
    out = []
    before: dict[str, tuple[int, int, int]] = {pid: (0, 0, 0) for pid in results}
    for name in names:
        machines, changes = {}, set()
        for pid, r in results.items():
            rec = next((s for s in r.program.program.stages if s.name == name), None)
            if rec is None:
                continue
            cause = _CAUSES.get(name, lambda p: "")(by_id[pid])
            machines[pid] = {
                "kernels": rec.kernels,
                "tiles": rec.tiles,
                "offchip_bytes": rec.offchip_bytes,
                "notes": list(rec.notes),
                "cause": cause,
            }
            now = (rec.kernels, rec.tiles, rec.offchip_bytes)
            changes.add((tuple(a - b for a, b in zip(now, before[pid])), cause))  # what this stage did, and why
            before[pid] = now
        out.append({"stage": name, "machines": machines, "differs": len(changes) > 1})
    evaluation = {}
    for pid, r in results.items():
        p = by_id[pid]
        off = p.off_chip_level()
        evaluation[pid] = {
            "makespan_s": r.makespan_s,
            "critical_path_s": r.critical_path.time_s,
            "serial_time_s": r.serial_time_s,
            "policy": r.program.policy.value,
            "cause": f"peak {p.peak(block.dtype).flop_per_s / 1e12:,.0f} TFLOP/s ({p.peak(block.dtype).used}), "
            f"off chip {off.name} {off.bandwidth_bytes_per_s / 1e9:,.0f} GB/s"
            if off
            else "",
        }
    out.append({"stage": "evaluate", "machines": evaluation, "differs": True})
    return out


def render_stages(stages: list[dict[str, Any]]) -> str:
    """The markdown section ``Through the compiler stages`` for :func:`compiler_stages`."""
    lines = [
        "## Through the compiler stages",
        "",
        "The same block compiled for each machine (`dfx.compile`), stage by stage: the program after "
        "each pass, what differs between the machines, and the hardware figure that decides it. Its "
        "makespan is dfx's compiler's program (its own fusion rules, every array at its full peak), not "
        "the FlashAttention model above, so the two times differ.",
        "",
    ]
    for s in stages:
        verdict = "differs" if s["differs"] else "same on every machine"
        lines.append(f"### {s['stage']} ({verdict})")
        lines.append("")
        for pid, m in s["machines"].items():
            if s["stage"] == "evaluate":
                lines.append(
                    f"- {pid}: makespan of the compiled program {m['makespan_s'] * 1e3:.3f} ms ({m['policy']} schedule; critical "
                    f"path {m['critical_path_s'] * 1e3:.3f} ms, serial {m['serial_time_s'] * 1e3:.3f} ms). "
                    f"Because of: {m['cause']}."
                )
            else:
                note = f"; {m['notes'][0]}" if m["notes"] else ""
                lines.append(
                    f"- {pid}: {m['kernels']} kernels, {m['tiles']} tiles, {_mb(m['offchip_bytes'])} off chip"
                    f"{note}. Because of: {m['cause']}."
                )
        lines.append("")
    return "\n".join(lines)
