"""Time every node of an exported graph for real: an ``fx.Interpreter`` that wraps one hook.

Override map (``torch.fx.Interpreter``)::

    run()
      +-- run_node(n)            <- NodeClock: fetch args, then clock() around the node's call only
            +-- placeholder / get_attr / output   (not timed: nothing is launched)
            +-- call_function / call_module / call_method   (timed)

The clock brackets only the call (``target(*args, **kwargs)``), not fx's argument fetching, so a
node's time is what eager PyTorch pays for that op: Python and dispatcher overhead plus the kernel.
On a GPU the device is synchronised before and after each call (``sync``), so launch latency is
charged to the node that launched.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch
import torch.fx

__all__ = ["NodeClock", "NodeTimes", "time_graph_nodes", "time_whole_graph"]

_UNTIMED = ("placeholder", "get_attr", "output")


class NodeClock(torch.fx.Interpreter):
    """Run a ``GraphModule`` once, recording each launched node's seconds in ``self.seconds``.

    Parameters
    ----------
    gm : torch.fx.GraphModule
    clock : callable
        Returns seconds as a float (default ``time.perf_counter``); tests pass a fake one.
    sync : callable, optional
        Called before and after each timed node (``torch.cuda.synchronize`` on a GPU).
    """

    def __init__(self, gm: torch.fx.GraphModule, clock: Callable[[], float] = time.perf_counter,
                 sync: Callable[[], None] | None = None) -> None:  # fmt: skip
        super().__init__(gm, garbage_collect_values=True)
        self.clock = clock
        self.sync = sync or (lambda: None)
        self.seconds: dict[str, float] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        if n.op in _UNTIMED:
            return super().run_node(n)
        with self._set_current_node(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            call = getattr(self, n.op)
            self.sync()
            start = self.clock()
            out = call(n.target, args, kwargs)
            self.sync()
            self.seconds[n.name] = self.clock() - start
            return out


@dataclass(frozen=True)
class NodeTimes:
    """Per-node medians over ``repeat`` timed runs (after ``warmup`` untimed ones)."""

    median_s: Mapping[str, float]
    repeat: int
    warmup: int

    def to_dict(self) -> dict[str, Any]:
        return {"median_s": dict(self.median_s), "repeat": self.repeat, "warmup": self.warmup}


def time_graph_nodes(gm: torch.fx.GraphModule, inputs: list[Any], *, repeat: int = 10, warmup: int = 2,
                     clock: Callable[[], float] = time.perf_counter,
                     sync: Callable[[], None] | None = None) -> NodeTimes:  # fmt: skip
    """Run ``gm`` on ``inputs`` ``warmup + repeat`` times node by node; keep each node's median.

    Examples
    --------
    >>> gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    >>> t = time_graph_nodes(gm, [torch.ones(4)], repeat=3, warmup=1)
    >>> list(t.median_s)
    ['relu']
    """
    runs: list[dict[str, float]] = []
    with torch.no_grad():
        for i in range(warmup + repeat):
            interp = NodeClock(gm, clock, sync)
            interp.run(*inputs)
            if i >= warmup:
                runs.append(interp.seconds)
    names = list(runs[0]) if runs else []
    medians = {name: statistics.median(r[name] for r in runs) for name in names}
    return NodeTimes(medians, repeat, warmup)


def time_whole_graph(fn: Callable[[], Any], *, repeat: int = 10, warmup: int = 2,
                     clock: Callable[[], float] = time.perf_counter,
                     sync: Callable[[], None] | None = None) -> float:  # fmt: skip
    """Median seconds of ``fn()`` (the whole graph in one call, no per-node instrumentation)."""
    sync = sync or (lambda: None)
    times = []
    with torch.no_grad():
        for i in range(warmup + repeat):
            sync()
            start = clock()
            fn()
            sync()
            elapsed = clock() - start
            if i >= warmup:
                times.append(elapsed)
    return statistics.median(times)
