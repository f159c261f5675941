"""The one error a document reader raises: which document, which key, and the fix."""

from __future__ import annotations

from dfx.errors import DfxError

__all__ = ["SchemaError"]

_REWRITE = {
    "dfx.analysis": "write it again with `dfx analyze --out DIR` (or `--json`)",
    "dfx.simulation": "write it again with `dfx simulate --json`",
    "dfx.validation": "write it again with `dfx validate --json`",
    "dfx.calibration": "write it again with `dfx calibrate --json > FILE`",
    "dfx.compile": "write it again with `dfx compile --json`",
    "dfx.dag": "write it again with `dfx dag --json`",
    "dfx.sweep": "run the sweep again into a fresh directory",
}


class SchemaError(DfxError):
    """A document lacks a key its schema requires, or holds a value of the wrong kind.

    ``document`` is the schema tag (``dfx.analysis/1``), ``key`` the dotted path of the key
    (``hardware.nvidia-h100-sxm.nodes.mm.time_s``), ``problem`` what was found; the message ends
    with the fix.

    Examples
    --------
    >>> str(SchemaError("dfx.analysis/1", "totals.flops", "is missing"))
    'dfx.analysis/1: totals.flops is missing; the document was written by another dfx version or edited: write it again with `dfx analyze --out DIR` (or `--json`)'
    """

    def __init__(self, document: str, key: str, problem: str, fix: str | None = None):
        self.document, self.key, self.problem = document, key, problem
        family = document.split("/")[0]
        self.fix = fix or (
            "the document was written by another dfx version or edited: "
            + _REWRITE.get(family, "write it again with the dfx command that made it")
        )
        super().__init__(f"{document}: {key} {problem}; {self.fix}")
