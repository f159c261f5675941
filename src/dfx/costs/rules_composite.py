"""Composite kernels torch runs as one op on every device: costed as the formula they compute.

Each was an unknown op (left out of the totals) until these rules: ``nn.Bilinear``'s
``_trilinear``, weight normalization's ``_weight_norm_interface``, ``torch.cdist`` and
``F.pdist``'s ``_cdist_forward`` / ``_pdist_forward``, and ``F.grid_sample``'s
``grid_sampler_2d``. Per-element FLOPs follow :mod:`dfx.costs.rules_pointwise` (one per add, mul,
sub, abs, sqrt, pow, ...); a multiply-accumulate is 2 FLOPs (:data:`~dfx.costs.terms.FMA_FLOPS`).

    _trilinear       i1, i2, i3 expanded (size-1 dims inserted at expand1..3) broadcast to a space of
                     P points; torch multiplies i1 * i2 (P, elementwise), then contracts with i3 over
                     sumdim (a MAC per point, 2P, matmul). Bilinear [B, I] x [O, I, J] x [B, J]:
                     P = B*O*I*J.
    weight norm      w = v * (g / ||v||), norms over every dim but ``dim``: square and add per
                     element of v (2), sqrt and divide per norm (2), multiply per element (1)
    cdist p=2        torch's Euclidean path (``_euclidean_dist``, also recorded on its own): x1 @ x2^T (2*B*P*R*M, matmul),
                     row norms (square, add: 2 per element of x1 and x2), and per output
                     -2*xy, + |x|^2, + |y|^2, clamp, sqrt (5)
    cdist other p    per (pair, dim): sub, abs, add (3); p not in {1, inf}: + pow per (pair, dim)
                     and a root per pair
    pdist            as cdist's direct form over the N*(N-1)/2 pairs of rows
    grid_sampler_2d  per output location (N, Ho, Wo): unnormalize x and y (add 1, mul, sub: 6);
                     per output element (N, C, Ho, Wo): bilinear 4 taps (2*4 - 1 = 7), nearest 0,
                     bicubic 16 taps (31), as upsampling counts taps
"""

from __future__ import annotations

import math

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import FMA_FLOPS, broadcast_shapes, io_cost, numel, tensor_arg
from dfx.ir import AtenCall, TensorSpec

__all__ = []

M, E, N = Category.MATMUL, Category.ELEMENTWISE, Category.NORMALIZATION


def _tensor(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


def _expanded(shape: tuple[int, ...], dims) -> tuple[int, ...]:
    """``shape`` with a size-1 dim inserted at each of ``dims`` (ascending, as aten's ``_trilinear``)."""
    out = list(shape)
    for d in sorted(dims or ()):
        out.insert(d, 1)
    return tuple(out)


@register_cost(["aten._trilinear"], category=M)
def trilinear(call: AtenCall) -> dict[Category, Cost]:
    # _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)
    specs = [_tensor(call, i, n) for i, n in ((0, "i1"), (1, "i2"), (2, "i3"))]
    expands = [call.arg(i, n) for i, n in ((3, "expand1"), (4, "expand2"), (5, "expand3"))]
    space = numel(broadcast_shapes(*(_expanded(s.shape, e) for s, e in zip(specs, expands))))
    return {M: io_cost(call, FMA_FLOPS * space), E: Cost(space)}  # i1 * i2, then a MAC with i3


_NORM_PER_ELEMENT = 3  # square, add (the norm), multiply by g / norm
_NORM_PER_NORM = 2  # sqrt, g / norm


@register_cost(["aten._weight_norm_interface"], category=N)
def weight_norm(call: AtenCall) -> Cost:
    # _weight_norm_interface(v, g, dim=0) -> (w, norms); the norms have g's shape
    v, g = _tensor(call, 0, "v"), _tensor(call, 1, "g")
    return io_cost(call, _NORM_PER_ELEMENT * v.numel + _NORM_PER_NORM * g.numel)


def _distance_flops(pairs: int, dims: int, p: float) -> int:
    # direct form: per (pair, dim) sub, abs, add; a general p adds pow per (pair, dim), root per pair
    if p in (1.0, math.inf, 0.0):
        return 3 * pairs * dims
    return 4 * pairs * dims + pairs


_EUCLID_PER_OUTPUT = 5  # -2*xy, + |x|^2, + |y|^2, clamp at 0, sqrt
_ROW_NORM_PER_ELEMENT = 2  # square, add


@register_cost(["aten._cdist_forward"], category=M)
def cdist(call: AtenCall) -> Cost | dict[Category, Cost]:
    # _cdist_forward(x1 [B, P, M], x2 [B, R, M], p, compute_mode) -> [B, P, R]
    x1, x2 = _tensor(call, 0, "x1"), _tensor(call, 1, "x2")
    p = float(call.arg(2, "p"))
    out = call.outputs[0].numel if call.outputs else 0
    dims = x1.shape[-1]
    if p == 2.0:
        return _euclidean(call, x1, x2, out)
    return {E: io_cost(call, _distance_flops(out, dims, p))}


@register_cost(["aten._euclidean_dist"], category=M)
def euclidean_dist(call: AtenCall) -> dict[Category, Cost]:
    # _euclidean_dist(x1 [B, P, M], x2 [B, R, M]) -> [B, P, R]: cdist's p=2 path when P or R > 25
    out = call.outputs[0].numel if call.outputs else 0
    return _euclidean(call, _tensor(call, 0, "x1"), _tensor(call, 1, "x2"), out)


def _euclidean(call: AtenCall, x1: TensorSpec, x2: TensorSpec, out: int) -> dict[Category, Cost]:
    product = FMA_FLOPS * out * x1.shape[-1]  # [B, P, M] @ [B, M, R]
    norms = _ROW_NORM_PER_ELEMENT * (x1.numel + x2.numel)
    return {M: io_cost(call, product), E: Cost(norms + _EUCLID_PER_OUTPUT * out)}


@register_cost(["aten._pdist_forward"], category=E)
def pdist(call: AtenCall) -> Cost:
    # _pdist_forward(x [N, M], p) -> [N * (N - 1) / 2]
    x = _tensor(call, 0, "self")
    p = float(call.arg(1, "p") if call.arg(1, "p") is not None else 2.0)
    rows, dims = x.shape[0], x.shape[-1]
    return io_cost(call, _distance_flops(rows * (rows - 1) // 2, dims, p))


_GRID_COORD_FLOPS = 6  # x and y: (c + 1) * size / 2 - 0.5 -> add, mul, sub each
_GRID_TAP_FLOPS = {0: 2 * 4 - 1, 1: 0, 2: 2 * 16 - 1}  # bilinear, nearest, bicubic: taps muls + (taps - 1) adds


@register_cost(["aten.grid_sampler_2d", "aten.cudnn_grid_sampler"], category=E)
def grid_sampler_2d(call: AtenCall) -> Cost:
    # grid_sampler_2d(input [N, C, H, W], grid [N, Ho, Wo, 2], interpolation_mode, padding_mode, align_corners)
    x, grid = _tensor(call, 0, "input"), _tensor(call, 1, "grid")
    mode = call.arg(2, "interpolation_mode")
    locations = grid.numel // 2  # N * Ho * Wo
    taps = _GRID_TAP_FLOPS.get(mode if isinstance(mode, int) else 0, _GRID_TAP_FLOPS[0])
    return io_cost(call, _GRID_COORD_FLOPS * locations + taps * locations * x.shape[1])
