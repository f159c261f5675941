"""The result of an analysis: :class:`Analysis`, a costed graph and its evaluation on each profile, and
its export document (``dfx.analysis/1``, :mod:`dfx.schema.analysis`).

In a module of its own so that the analyses of a phase and of a training step
(:mod:`dfx.inference.analyze`, :mod:`dfx.training.analyze`) build it without importing
:mod:`dfx.analysis`, which runs them.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dfx.costs import CostedGraph
from dfx.costs.terms import FMA_FLOPS
from dfx.errors import DfxError
from dfx.ir import Graph
from dfx.schema.ids import ANALYSIS_SCHEMA as SCHEMA

if TYPE_CHECKING:  # export records, imported where a record is built: a sweep never builds one
    from dfx.schema.analysis import AnalysisDoc


__all__ = ["Analysis"]

# A joint graph's meta that the document's ``training`` object holds, typed: not repeated in ``model``.
_TRAINING_META = frozenset({"joint_gradients", "min_cut_saved_bytes"})


@dataclass(frozen=True)
class Analysis:
    """A costed graph and its evaluation on zero or more hardware profiles.

    Attributes
    ----------
    costed : CostedGraph
        Every node with FLOPs, bytes read/written, intensity and category.
    hardware : tuple
        One ``dfx.roofline.HardwareResult`` per profile, in the order asked for.
    model : dict
        How the graph was obtained: name, capture method, batch, seq, dtype.
    """

    costed: CostedGraph
    hardware: tuple[Any, ...] = ()
    model: dict[str, Any] = field(default_factory=dict)
    inference: Any = None  # dfx.inference.InferenceResult when a phase was asked for
    training: Any = None  # dfx.training.TrainingStep when train=True

    @property
    def graph(self) -> Graph:
        return self.costed.graph

    def to_record(self) -> AnalysisDoc:
        """The export document as its record (:mod:`dfx.schema.analysis`)."""
        from dfx.schema.analysis import (
            AnalysisDoc,
            CoverageRecord,
            EdgeRecord,
            NodeRecord,
            TotalsRecord,
            UnknownOpRecord,
        )

        from dfx._version import __version__

        costed = self.costed
        graph = costed.graph
        total = costed.total
        by_category = costed.flops_by_category()
        nodes = tuple(
            NodeRecord(
                name=cn.node.name,
                op=cn.node.op,
                target=cn.node.target,
                module_path=cn.node.module_path,
                category=cn.category.value,
                flops=cn.cost.flops,
                bytes_read=cn.cost.bytes_read,
                bytes_written=cn.cost.bytes_written,
                intensity_flop_per_byte=cn.cost.intensity,
                dtype=cn.dtype,
                input_kind=cn.node.input_kind or None,
                inputs=tuple(dict.fromkeys(e.src for e in cn.node.inputs)),
                outputs=tuple(MappingProxyType(o.to_dict()) for o in cn.node.outputs),
                params=tuple(cn.node.params),
                aten_ops=tuple(c.op for c in cn.node.aten_calls),
                unknown_ops=tuple(cn.unknown_ops),
            )
            for cn in costed.nodes
        )
        nxg = graph.to_networkx()
        return AnalysisDoc(
            schema=SCHEMA,
            dfx_version=__version__,
            model=MappingProxyType(
                {
                    **self.model,
                    "graph_name": graph.name,
                    "capture_method": graph.capture_method,
                    **{k: v for k, v in graph.meta if k not in _TRAINING_META},
                }
            ),
            totals=TotalsRecord(
                flops=total.flops,
                bytes_read=total.bytes_read,
                bytes_written=total.bytes_written,
                intensity_flop_per_byte=total.intensity,
                flops_by_category=MappingProxyType(dict(by_category)),
                matmul_macs=by_category["matmul"] // FMA_FLOPS,
                unique_parameter_count=costed.unique_parameter_count(),
                unique_parameter_bytes=costed.unique_parameter_bytes(),
                parameter_traffic_bytes=costed.parameter_traffic_bytes(),
                node_count=len(graph.nodes),
            ),
            coverage=CoverageRecord(
                unknown_ops=tuple(
                    UnknownOpRecord(target=u.target, count=u.count, nodes=tuple(u.nodes)) for u in costed.unknown_ops
                ),
                aten_calls=sum(len(n.aten_calls) for n in graph.nodes),
            ),
            nodes=nodes,
            edges=tuple(EdgeRecord(src=u, dst=v, bytes=d["bytes"]) for u, v, d in nxg.edges(data=True)),
            hardware=MappingProxyType({r.profile.id: r.to_record() for r in self.hardware}),
            inference=None if self.inference is None else MappingProxyType(self.inference.to_dict()),
            training=None if self.training is None else self.training.to_record(),
        )

    def to_dict(self) -> dict[str, Any]:
        """The export document, schema ``dfx.analysis/1`` (see ``docs/export-format.md``)."""
        return self.to_record().to_dict()

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def nodes_csv(self, doc: dict[str, Any] | None = None) -> str:
        """One row per node: costs, and bound and time per profile (the ``nodes.csv`` file).

        ``doc`` is this analysis's :meth:`to_dict`, when the caller already has it.
        """
        from dfx.schema.analysis import read_analysis

        record = self.to_record() if doc is None else read_analysis(doc)
        buf = io.StringIO()
        cols = [
            "name",
            "op",
            "target",
            "module_path",
            "category",
            "dtype",
            "flops",
            "bytes_read",
            "bytes_written",
            "intensity",
        ]
        hw_ids = list(record.hardware)
        header = cols + [f"{h}:{k}" for h in hw_ids for k in ("bound", "time_s")]
        writer = csv.writer(buf)
        writer.writerow(header)
        for n in record.nodes:
            row = [
                n.name,
                n.op,
                n.target,
                n.module_path,
                n.category,
                n.dtype,
                n.flops,
                n.bytes_read,
                n.bytes_written,
                n.intensity_flop_per_byte,
            ]
            for h in hw_ids:
                per = record.hardware[h].nodes
                row += [per[n.name].bound.value, per[n.name].time_s] if n.name in per else ["", ""]
            writer.writerow(row)
        return buf.getvalue()

    def __repr__(self) -> str:
        """One short line (the full record is ``to_dict()``): model, size, FLOPs, latency per profile."""
        from dfx.report.console import format_flops, format_seconds

        times = ", ".join(f"{r.profile.id}: {format_seconds(r.latency_s)}" for r in self.hardware)
        dtype = self.model.get("dtype")
        return (
            f"<Analysis {self.model.get('name', self.graph.name)!r}"
            + (f" ({dtype})" if dtype else "")
            + f": {len(self.graph.nodes)} nodes, "
            f"{format_flops(self.costed.total.flops)}" + (f"; {times}" if times else "") + ">"
        )

    def _repr_html_(self) -> str:
        """Jupyter shows an ``Analysis`` as its report (``dfx.viz``): summary, DAG, roofline, node table."""
        from dfx.viz import render_pictures

        return render_pictures(self.to_dict()).files["report.html"]

    def to_pandas(self):
        """The node table as a ``pandas.DataFrame`` (needs pandas installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise DfxError(
                "to_pandas() needs pandas, which dfx does not install: `pip install 'dfx[pandas]'` "
                "(or `pip install pandas`)"
            ) from None
        return pd.read_csv(io.StringIO(self.nodes_csv()))
