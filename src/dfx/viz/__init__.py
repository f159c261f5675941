"""Pictures of an analysis: the DAG, the roofline and a self-contained HTML report.

Everything here reads only the export document (schema ``dfx.analysis/1``,
``docs/export-format.md``), never analyzer internals, and never imports torch: a saved
``analysis.json`` is drawn with ``dfx report analysis.json --out DIR``. Given a simulation document
too (``dfx.simulation/1``, ``--simulation``), the report gains its timeline; given a validation
document (``dfx.validation/1``, ``--validation``), its predicted-versus-measured scatter. See
``docs/pictures.md``.
"""

from dfx.viz.graph import Level
from dfx.viz.render import Pictures, render_pictures, render_report, write_pictures

__all__ = ["Level", "Pictures", "render_pictures", "render_report", "write_pictures"]
