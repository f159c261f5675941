"""Entry points that start from a model name: capture (lazily), then the pure models of this package.

Only this module and :mod:`.command` reach for capture (and so torch), and only inside functions.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from dfx.arch.memory.capacity import CapacityReport, capacity_report, onchip_memory
from dfx.arch.memory.energy import EnergyReport, energy_report
from dfx.arch.memory.gemms import gemms
from dfx.arch.memory.lifetime import Lifetime, lifetime
from dfx.arch.memory.model_shape import (
    graph_kv_cache_bytes,
    graph_kv_geometry,
    kv_geometry_from_config,
    parameter_count_from_config,
)
from dfx.arch.memory.tiling import Gemm, Machine, TileChoice, choose_tile, evaluate_tile
from dfx.costs.record import CostedGraph
from dfx.errors import DfxError
from dfx.hardware import HardwareProfile, load_profile
from dfx.ir import itemsize_bytes, normalize_dtype
from dfx.schema.ids import TILE_SCHEMA

__all__ = [
    "TileReport",
    "capture_costed",
    "dtype_name",
    "machine_for",
    "model_capacity",
    "model_energy",
    "model_lifetime",
    "profile_of",
    "tile_gemms",
    "tile_model",
    "accumulator_dtype",
]

_HF = "hf:"
_LAYER_KEYS = ("num_hidden_layers", "n_layer")


def profile_of(hw: str | HardwareProfile) -> HardwareProfile:
    return hw if isinstance(hw, HardwareProfile) else load_profile(hw)


def dtype_name(dtype: str) -> str:
    try:
        return normalize_dtype(dtype)
    except ValueError:
        raise DfxError(
            f"unknown dtype {dtype!r}; expected fp32, bf16 or fp16 (or float32, bfloat16, float16)"
        ) from None


# The accumulator a matmul of these inputs sums into: fp32 for 16- and 8-bit floats, int32 for int8
# (a TPU MXU and NVIDIA tensor cores accumulate bf16/fp16/fp8 products in fp32; int8 in int32).
_ACCUMULATOR = {"bfloat16": "float32", "float16": "float32", "float8_e4m3fn": "float32", "float8_e5m2": "float32"}
_ACCUMULATOR["int8"] = "int32"


def accumulator_dtype(dtype: str, acc_dtype: str | None = None) -> str:
    """``acc_dtype`` (normalized), else the default accumulator of ``dtype`` inputs: fp32 for bf16,
    fp16 and fp8, int32 for int8, the input dtype otherwise (fp32 stays fp32).

    Examples
    --------
    >>> accumulator_dtype("bf16"), accumulator_dtype("fp32"), accumulator_dtype("bf16", "bf16")
    ('float32', 'float32', 'bfloat16')
    """
    if acc_dtype is not None:
        return dtype_name(acc_dtype)
    name = dtype_name(dtype)
    return _ACCUMULATOR.get(name, name)


def capture_costed(
    model: str,
    *,
    dtype: str,
    batch: int = 1,
    seq: int | None = None,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
) -> CostedGraph:
    """Capture and cost ``model`` (a spec string, see :func:`dfx.models.resolve`; a file model takes
    ``input_shapes``, each a shape or an :class:`~dfx.ir.spec.InputShape` with its dtype)."""
    from dfx.analysis import capture_spec
    from dfx.costs import annotate

    if input_shapes:  # a file model: its shapes say batch and sequence
        batch, seq = None, None
    graph, _ = capture_spec(model, batch=batch, seq=seq, dtype=dtype, input_shapes=input_shapes)
    return annotate(graph)


def _categories(costed: CostedGraph) -> dict[str, str]:
    return {cn.name: cn.category.value for cn in costed.nodes}


def _hf_config(model: str) -> dict[str, Any] | None:
    if not model.startswith(_HF):
        return None
    from dfx.models.hf import load_config

    return load_config(model[len(_HF) :])[0]


def _one_layer_costed(config: dict[str, Any], *, dtype: str, batch: int, seq: int | None) -> CostedGraph:
    """Capture the config with one layer: layers run one after another and free their activations,
    so one layer (plus embeddings and head) has the whole model's activation peak."""
    small = {**config, **{k: 1 for k in _LAYER_KEYS if k in config}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(small))
        return capture_costed(f"{_HF}{path}", dtype=dtype, batch=batch, seq=seq)


def _default_seq(model: str, config: dict[str, Any] | None, seq: int | None) -> int:
    if seq is not None:
        return seq
    if config is not None:
        return config.get("max_position_embeddings", config.get("n_positions", 128))
    from dfx.models import PRESETS

    return PRESETS[model].default_seq if model in PRESETS else 0


def _storage(dtype: str, weight_dtype: str | None, kv_dtype: str | None) -> tuple[str, str, float, float, float]:
    """``(capture dtype, activation dtype's name, weight, KV and activation bytes per element)``.

    A width torch builds in (fp32, bf16, fp16, fp64) with no ``weight_dtype``/``kv_dtype`` is its
    itemsize throughout; otherwise the widths of :class:`dfx.costs.precision.Precision` (fp8, int8,
    int4 and fp4 weights captured in bf16 and priced at their stored bytes).
    """
    from dfx.costs.precision import CAPTURE_DTYPES, Precision, bytes_per_element, storage_name

    try:
        plain = weight_dtype is None and kv_dtype is None and storage_name(dtype) in CAPTURE_DTYPES
    except DfxError:
        plain = True  # not a storage width (fp64): the capture names the accepted dtypes
    if plain:
        name = dtype_name(dtype)
        size = float(itemsize_bytes(name))
        return name, name, size, size, size
    p = Precision.of(dtype, weight_dtype, kv_dtype)
    return (
        p.capture,
        p.activation,
        bytes_per_element(p.weight),
        bytes_per_element(p.kv),
        bytes_per_element(p.activation),
    )


def model_capacity(
    model: str,
    hw: str | HardwareProfile,
    *,
    dtype: str = "bf16",
    batch: int = 1,
    seq: int | None = None,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
) -> CapacityReport:
    """Weights, activations and KV cache of ``model`` against ``hw``'s memories, each at the width it
    is stored in: ``dtype`` for activations, ``weight_dtype`` and ``kv_dtype`` (default ``dtype``)
    for the weights and the cache; fp8, int8, int4 and fp4 are priced from a bf16 capture.

    ``hf:`` configs: parameters and KV geometry in closed form from the config; activations from
    a one-layer capture. Other models: everything from the captured graph.
    """
    profile = profile_of(hw)
    capture, name, weight_b, kv_b, act_b = _storage(dtype, weight_dtype, kv_dtype)
    captured_b = itemsize_bytes(capture)
    config = _hf_config(model)
    count = parameter_count_from_config(config) if config is not None else None
    if count is not None:
        costed = _one_layer_costed(config, dtype=capture, batch=batch, seq=seq)
        geometry = kv_geometry_from_config(config)
        seq_used = _default_seq(model, config, seq)
        kv = math.ceil(geometry.cache_bytes(batch, seq_used, kv_b))
        params_bytes = math.ceil(count * weight_b)
        kv_info = {
            "layers": geometry.layers,
            "kv_heads": geometry.kv_heads,
            "head_dim": geometry.head_dim,
            "causal": geometry.causal,
            "from": "config",
        }
        sources = {"parameters": "closed form from the config", "activations": "one-layer capture"}
    else:
        costed = capture_costed(model, dtype=capture, batch=batch, seq=seq, input_shapes=input_shapes)
        seq_used = _default_seq(model, config, seq)
        count = costed.unique_parameter_count()
        buffers = sum(p.spec.nbytes for p in costed.graph.parameters if p.kind != "parameter")
        params_bytes = (
            math.ceil(count * weight_b) + buffers if weight_b != captured_b else costed.unique_parameter_bytes()
        )
        kv = math.ceil(graph_kv_cache_bytes(costed.graph) * kv_b / captured_b)
        found = graph_kv_geometry(costed.graph)
        kv_info = {"from": "attention operands in the captured graph"}
        if found is not None:
            kv_info.update(layers=found.layers, kv_heads=found.kv_heads, head_dim=found.head_dim, causal=True)
        sources = {"parameters": "captured graph (unique footprint)", "activations": "captured graph"}
    if (weight_b, kv_b, act_b) != (captured_b,) * 3:
        sources["widths"] = (
            f"stored: weights {weight_b:g} B, KV cache {kv_b:g} B, activations {act_b:g} B per element "
            f"(captured in {capture}; dfx.costs.precision)"
        )
    peak = math.ceil(lifetime(costed.graph, math.inf, _categories(costed)).peak_bytes * act_b / captured_b)
    return capacity_report(
        profile,
        model=model,
        dtype=name,
        batch=batch,
        seq=seq_used,
        parameter_count=count,
        parameter_bytes=params_bytes,
        activation_bytes=peak,
        kv_cache_bytes=kv,
        kv=kv_info,
        sources=sources,
    )


def model_lifetime(
    model: str,
    hw: str | HardwareProfile,
    *,
    dtype: str = "bf16",
    batch: int = 1,
    seq: int | None = None,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
) -> Lifetime:
    """Live ranges of ``model``'s activations placed in ``hw``'s on-chip memory."""
    profile = profile_of(hw)
    costed = capture_costed(model, dtype=dtype_name(dtype), batch=batch, seq=seq, input_shapes=input_shapes)
    level = onchip_memory(profile)
    return lifetime(costed.graph, level.capacity_bytes if level else 0.0, _categories(costed))


def model_energy(
    model: str,
    hw: str | HardwareProfile,
    *,
    dtype: str = "bf16",
    batch: int = 1,
    seq: int | None = None,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
) -> EnergyReport:
    """Eager versus dataflow energy of ``model`` on ``hw`` (see :mod:`.energy`)."""
    return energy_report(
        capture_costed(model, dtype=dtype_name(dtype), batch=batch, seq=seq, input_shapes=input_shapes), profile_of(hw)
    )


def machine_for(profile: HardwareProfile, dtype: str) -> Machine:
    """One core's scratchpad (the on-chip level's capacity per instance), cores, peak, off-chip bandwidth."""
    level, off = onchip_memory(profile), profile.off_chip_level()
    if level is None or off is None:
        raise DfxError(
            f"profile {profile.id!r} has no on-chip level with a capacity, or no off-chip bandwidth; tiling needs both"
        )
    c = profile.compute
    rows, cols = c.array_rows or 1, c.array_cols or 1
    return Machine(
        scratchpad_bytes=level.capacity_per_instance_bytes,
        cores=c.cores or 1,
        peak_flop_per_s=profile.peak(dtype).flop_per_s,
        offchip_bytes_per_s=off.bandwidth_bytes_per_s,
        granule_m=rows,
        granule_n=cols,
        granule_k=rows,
    )


@dataclass(frozen=True)
class TileReport:
    """Per matmul: the chosen tile and, for contrast, the smallest (one array side) tile."""

    hardware: str
    dtype: str
    double_buffer: bool
    machine: Machine
    chosen: tuple[TileChoice, ...]
    small: tuple[TileChoice, ...]
    acc_dtype: str | None = None  # the accumulator output tiles are held at

    def to_dict(self) -> dict[str, Any]:
        m = self.machine
        return {
            "schema": TILE_SCHEMA,
            "hardware": self.hardware,
            "dtype": self.dtype,
            "acc_dtype": self.acc_dtype,
            "double_buffer": self.double_buffer,
            "scratchpad_bytes": m.scratchpad_bytes,
            "cores": m.cores,
            "peak_flop_per_s": m.peak_flop_per_s,
            "offchip_bytes_per_s": m.offchip_bytes_per_s,
            "matmuls": [{**c.to_dict(), "small_tile": s.to_dict()} for c, s in zip(self.chosen, self.small)],
        }


def tile_gemms(
    found: list[Gemm],
    hw: str | HardwareProfile,
    *,
    dtype: str = "bf16",
    double_buffer: bool = True,
    acc_dtype: str | None = None,
) -> TileReport:
    """Tile each GEMM on ``hw`` (:func:`.tiling.choose_tile`), with the one-array-side tile beside it.

    Each output tile is held at ``acc_dtype``'s width (:func:`accumulator_dtype`: fp32 for bf16 and
    fp16 inputs by default), unless a GEMM gives its own ``acc_bytes``.
    """
    profile, dtype = profile_of(hw), dtype_name(dtype)
    acc = accumulator_dtype(dtype, acc_dtype)
    acc_bytes = itemsize_bytes(acc)
    found = [g if g.acc_bytes is not None else replace(g, acc_bytes=acc_bytes) for g in found]
    machine = machine_for(profile, dtype)
    cache: dict[tuple[int, ...], TileChoice] = {}
    chosen, small = [], []
    for g in found:
        key = (g.m, g.k, g.n, g.elem_bytes, g.batch, g.accumulator_bytes)
        if key not in cache:
            cache[key] = choose_tile(g, machine, double_buffer)
        c = cache[key]
        chosen.append(
            TileChoice(
                g,
                c.tm,
                c.tn,
                c.tk,
                c.working_set_bytes,
                c.scratchpad_bytes,
                c.offchip_bytes,
                c.intensity,
                c.compute_time_s,
                c.memory_time_s,
            )
        )
        sm, sn, sk = min(g.m, machine.granule_m), min(g.n, machine.granule_n), min(g.k, machine.granule_k)
        small.append(evaluate_tile(g, machine, sm, sn, sk, double_buffer))
    return TileReport(profile.id, dtype, double_buffer, machine, tuple(chosen), tuple(small), acc)


def tile_model(
    model: str,
    hw: str | HardwareProfile,
    *,
    dtype: str = "bf16",
    batch: int = 1,
    seq: int | None = None,
    double_buffer: bool = True,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    acc_dtype: str | None = None,
) -> TileReport:
    """Tile every matmul of ``model`` on ``hw`` (output tiles at ``acc_dtype``, see :func:`tile_gemms`)."""
    costed = capture_costed(model, dtype=dtype_name(dtype), batch=batch, seq=seq, input_shapes=input_shapes)
    found = gemms(costed)
    if not found:
        raise DfxError(f"model {model!r} has no mm/bmm matmul to tile")
    return tile_gemms(found, hw, dtype=dtype, double_buffer=double_buffer, acc_dtype=acc_dtype)
