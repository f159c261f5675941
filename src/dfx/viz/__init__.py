"""Pictures of an analysis: the DAG, the roofline and a self-contained HTML report.

Everything here reads only the export document (schema ``dfx.analysis/1``,
``docs/export-format.md``), never analyzer internals, and never imports torch: a saved
``analysis.json`` is drawn with ``dfx report analysis.json --out DIR``. Given a simulation document
too (``dfx.simulation/1``, ``--simulation``), the report gains its timeline; given a validation
document (``dfx.validation/1``, ``--validation``), its predicted-versus-measured scatter. See
``docs/pictures.md``.
"""

from dfx.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (dfx.lazy): the command line
# registers `dfx report` without loading matplotlib's and the layout's modules
_EXPORTS = {
    "Level": "graph",
    "Pictures": "render",
    "render_pictures": "render",
    "render_report": "render",
    "write_pictures": "render",
}

__all__ = ["Level", "Pictures", "render_pictures", "render_report", "write_pictures"]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
