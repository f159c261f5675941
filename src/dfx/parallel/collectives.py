"""Collectives over a profile's chip-to-chip links: all-reduce, all-gather, reduce-scatter, send/recv.

A ring of ``n`` chips moves a tensor of ``S`` bytes in steps; each step costs the link's latency,
and every chip sends ``factor * S`` bytes in all over its ring link (``Interconnect.ring_bytes_per_s``,
one direction). NCCL's performance notes give the factors as the "bus bandwidth" correction
(NVIDIA/nccl-tests doc/PERFORMANCE.md)::

    collective       steps (ring)   steps (direct)   bytes each chip sends
    all-reduce       2 (n - 1)      2                2 (n - 1) / n * S      # reduce-scatter + all-gather
    all-gather       n - 1          1                (n - 1) / n * S        # S: the gathered tensor
    reduce-scatter   n - 1          1                (n - 1) / n * S
    all-to-all       n - 1          1                (n - 1) / n * S        # expert parallelism
    send/recv        1              1                S

    time = base_latency + steps * hop_latency + bytes each chip sends / ring_bytes_per_s

All-to-all (expert parallelism's dispatch and combine, GShard arXiv 2006.16668 section 3.2): each
chip holds ``S`` bytes, ``1/n`` of them for each chip including itself, and sends the other
``(n - 1)/n``; nccl-tests gives its bus bandwidth as ``algBw * (n - 1) / n`` (PERFORMANCE.md,
"AllToAll"), and a ring schedule takes ``n - 1`` steps (one peer per step).

``direct``: on a Dragonfly whose groups are fully connected (Groq), each chip sends its pieces to
every other chip at once, so a collective takes one or two link crossings whatever ``n`` is (the
bytes are the same; NB: an estimate of how Groq's compiler schedules a collective, see the
profile's sources). The switch (NVSwitch), torus (TPU ICI, a ring along one axis) and Ethernet
topologies use the ring. ``base_latency`` is NCCL's once-per-collective cost (``baseLat`` in
src/graph/tuning.cc); ``hop_latency`` its per-step ``hwLat``.
"""

from __future__ import annotations

from enum import Enum

from dfx.errors import DfxError
from dfx.hardware import HardwareProfile
from dfx.hardware.schema import Interconnect, Topology

__all__ = ["Collective", "collective_s", "interconnect_of"]


class Collective(str, Enum):
    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    SEND_RECV = "send-recv"

    def __str__(self) -> str:
        return self.value


_DIRECT = (Topology.DRAGONFLY,)


def interconnect_of(profile: HardwareProfile) -> Interconnect:
    """The profile's ``interconnect``; a :class:`DfxError` naming the profile if it has none."""
    if profile.interconnect is None:
        raise DfxError(f"profile {profile.id!r} has no interconnect section; add one to spread a model over chips")
    return profile.interconnect


def _steps_and_factor(kind: Collective, n: int, direct: bool) -> tuple[int, float]:
    if kind is Collective.SEND_RECV:
        return 1, 1.0
    if kind is Collective.ALL_REDUCE:
        return (2 if direct else 2 * (n - 1)), 2 * (n - 1) / n
    return (1 if direct else n - 1), (n - 1) / n


def collective_s(link: Interconnect, kind: Collective, nbytes: float, chips: int) -> float:
    """Seconds one collective of ``nbytes`` takes over ``chips`` chips (formulas in the module docstring).

    ``nbytes`` is the tensor each chip holds before an all-reduce (or after an all-gather); for
    send/recv, the bytes sent. 0 s on one chip (nothing moves).

    Examples
    --------
    8 H100s (450 GB/s each way, 0.6 us per step, 6.6 us per collective), all-reduce of 16 MiB:
    6.6 + 14 * 0.6 = 15.0 us, plus 2 * 7 / 8 * 16,777,216 / 450e9 = 65.2 us: 80.2 us.

    >>> from dfx.hardware import load_profile
    >>> link = load_profile("h100").interconnect
    >>> round(collective_s(link, Collective.ALL_REDUCE, 16 * 2**20, 8) * 1e6, 1)
    80.2

    Raises
    ------
    DfxError
        If ``chips`` < 1 or ``nbytes`` < 0.
    """
    if chips < 1 or nbytes < 0:
        raise DfxError(f"collective over {chips} chips of {nbytes} bytes: chips must be >= 1 and bytes >= 0")
    if chips == 1 and kind is not Collective.SEND_RECV:
        return 0.0
    steps, factor = _steps_and_factor(kind, chips, link.topology in _DIRECT)
    return link.base_latency_s + steps * link.hop_latency_s + factor * nbytes / link.ring_bytes_per_s
