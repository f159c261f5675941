"""The error the simulator raises on bad input: one line, naming the node or the value at fault."""

from dfx.errors import DfxError

__all__ = ["SimulationError"]


class SimulationError(DfxError):
    """A DAG or an option the simulator cannot run: a cycle, a missing or negative duration, pes < 1."""
