"""A convolution layer as SCALE-Sim sees it (im2col, no padding) and its GEMM.

SCALE-Sim's conv topology row is ``name, ifmap H, ifmap W, filter H, filter W, channels,
num filters, stride,`` (``scalesim/topology_utils.py``): the same stride both ways, no padding, no
groups. Its operand matrices are the im2col ones::

    out_h = ceil((H - FH + stride) / stride)      out_w = ceil((W - FW + stride) / stride)
    M = out_h * out_w   (output pixels)      K = FH * FW * channels (window)      N = num_filters

NB: SCALE-Sim rounds the output size *up* (``topology_utils.calc_hyper_params``); PyTorch's
``floor((H - FH) / stride) + 1`` is one smaller when the stride does not divide ``H - FH`` (a last,
partial window). dfx follows SCALE-Sim here; graph nodes are mapped from their real output shapes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dfx.arch.systolic.dataflow import Dataflow
from dfx.arch.systolic.model import SramKB, SystolicResult, gemm
from dfx.errors import DfxError

__all__ = ["ConvLayer", "conv", "parse_conv"]

_FIELDS = ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride")


@dataclass(frozen=True)
class ConvLayer:
    """SCALE-Sim's conv layer fields, in its topology order."""

    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    num_filters: int
    stride: int = 1

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DfxError(f"conv {name} must be an integer >= 1, got {value!r}")
        if self.filter_h > self.ifmap_h or self.filter_w > self.ifmap_w:
            raise DfxError(
                f"conv filter {self.filter_h}x{self.filter_w} is larger than the ifmap "
                f"{self.ifmap_h}x{self.ifmap_w} (no padding, as in SCALE-Sim)"
            )

    @property
    def ofmap_hw(self) -> tuple[int, int]:
        s = self.stride  # ceil((H - FH + s) / s), SCALE-Sim's rounding
        return (-(-(self.ifmap_h - self.filter_h + s) // s), -(-(self.ifmap_w - self.filter_w + s) // s))

    @property
    def gemm_mkn(self) -> tuple[int, int, int]:
        """``(M, K, N)``: output pixels, window size, filters."""
        oh, ow = self.ofmap_hw
        return oh * ow, self.filter_h * self.filter_w * self.channels, self.num_filters

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_conv(text: str) -> ConvLayer:
    """``"H,W,FH,FW,C,NF[,S]"`` -> :class:`ConvLayer`; one-line :class:`DfxError` otherwise."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) not in (6, 7) or not all(p.isdigit() for p in parts):
        raise DfxError(f"--conv wants IFMAP_H,IFMAP_W,FILTER_H,FILTER_W,CHANNELS,NUM_FILTERS[,STRIDE], got {text!r}")
    return ConvLayer(*(int(p) for p in parts))


def conv(
    layer: ConvLayer,
    *,
    rows: int,
    cols: int,
    dataflow: Dataflow | str = Dataflow.WS,
    sram_kb: SramKB | tuple[float, float, float] | None = None,
    bandwidth: float | None = None,
    word_bytes: int = 1,
    pipelined: bool = False,
) -> SystolicResult:
    """:func:`~dfx.arch.systolic.gemm` of the layer's im2col GEMM.

    Examples
    --------
    >>> r = conv(ConvLayer(1, 4, 1, 1, 4, 4, 1), rows=4, cols=4, dataflow="os")  # PB-18 case 1
    >>> r.compute_cycles, r.compute_cycles_with_drain
    (10, 14)
    """
    m, k, n = layer.gemm_mkn
    return gemm(
        m,
        k,
        n,
        rows=rows,
        cols=cols,
        dataflow=dataflow,
        sram_kb=sram_kb,
        bandwidth=bandwidth,
        word_bytes=word_bytes,
        pipelined=pipelined,
    )
