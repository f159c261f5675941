"""Design-space sweeps: models x hardware x batch x seq x dtype x phase x execution model (``docs/sweeps.md``).

:func:`load_spec` reads the axes, :func:`run_sweep` runs the points a results table lacks (locally
or on Ray), :func:`write_report` draws the summary and pictures from the table.
"""

from dfx.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (dfx.lazy)
_EXPORTS = {
    "SweepRun": "runner",
    "run_sweep": "runner",
    "Point": "spec",
    "SweepSpec": "spec",
    "load_spec": "spec",
    "ResultsTable": "table",
}

__all__ = ["Point", "ResultsTable", "SweepRun", "SweepSpec", "load_spec", "run_sweep", "write_report"]


def write_report(*args, **kwargs):
    """See :func:`dfx.sweep.report.write_report` (imported on use: it needs matplotlib)."""
    from dfx.sweep.report import write_report as _write

    return _write(*args, **kwargs)


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
