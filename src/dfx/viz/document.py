"""The export document (``dfx.analysis/1``) as the pictures read it: the records of ``dfx.schema``.

The pictures never read a document key themselves: :func:`read_document` is
:func:`dfx.schema.analysis.read_analysis`, and the names below are its records under the names
``dfx.viz`` has always used. A missing or renamed key is a :class:`~dfx.schema.SchemaError` naming
the key. The document is described in ``docs/export-format.md``.
"""

from __future__ import annotations

from typing import Any

from dfx.schema.analysis import AnalysisDoc, EdgeRecord, HardwareRecord, HwNodeRecord, NodeRecord, read_analysis
from dfx.schema.ids import ANALYSIS_SCHEMA as SCHEMA

__all__ = ["SCHEMA", "Doc", "DocEdge", "DocNode", "HwNode", "HwSummary", "read_document"]

Doc = AnalysisDoc
DocNode = NodeRecord
DocEdge = EdgeRecord
HwNode = HwNodeRecord
HwSummary = HardwareRecord


def read_document(doc: Any) -> Doc:
    """Read an export document (``Analysis.to_dict()`` or a loaded ``analysis.json``).

    Raises
    ------
    SchemaError
        If the document is not ``dfx.analysis/1`` or lacks a key (the message names it).

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis
    >>> d = read_document(example_analysis("m"))
    >>> d.model_name, d.nodes
    ('m', ())
    """
    return read_analysis(doc)
