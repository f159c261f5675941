"""Which scheduler a machine's runtime uses by default: decided from the profile, in one place."""

from __future__ import annotations

from typing import Any

from dfx.errors import DfxError

__all__ = ["SCHEDULERS", "default_scheduler", "check_scheduler"]

SCHEDULERS = ("continuous", "static", "disaggregated")


def default_scheduler(profile: Any) -> tuple[str, str]:
    """The scheduler ``profile``'s own runtime uses, and why, from ``scheduling.commitment``.

    A machine whose schedule is decided at run time (``dynamic``: GPUs, CPUs) sizes each iteration
    at run time: ``continuous`` batching, as vLLM, SGLang and TensorRT-LLM's in-flight batching do.
    A machine whose compiler fixes the schedule (``static``: Groq, TPUs under XLA, Spyre) or its
    placement (``mixed``: Cerebras) runs programs compiled for fixed shapes: a ``static`` batch with
    prompt buckets (``docs/shapes.md``; vLLM's TPU backend pads to buckets for the same reason).
    ``disaggregated`` is never a default: it needs a second pool of chips, which the user asks for.

    Examples
    --------
    >>> from dfx.hardware import load_profile
    >>> default_scheduler(load_profile("groq-lpu"))[0], default_scheduler(load_profile("h100"))[0]
    ('static', 'continuous')
    """
    from dfx.hardware.schema import Commitment

    commitment = profile.scheduling.commitment
    if commitment is Commitment.DYNAMIC:
        return "continuous", "scheduling.commitment: dynamic (work sized at run time)"
    return "static", f"scheduling.commitment: {commitment.value} (shapes fixed at compile time)"


def check_scheduler(name: str | None) -> str | None:
    """``name`` if it is a scheduler (or ``None``: each machine's default); a one-line DfxError if not."""
    if name is None or name in SCHEDULERS:
        return name
    raise DfxError(f"unknown --scheduler {name!r}; expected one of {', '.join(SCHEDULERS)} (or leave it out)")
