"""Model Explorer node data: each profile's per-node latency, bound and intensity, and the FLOPs, as overlays.

Google's Model Explorer (``pip install ai-edge-model-explorer``, https://github.com/google-ai-edge/model-explorer)
draws a PyTorch ``ExportedProgram`` and colours its nodes by *node data*: a JSON object whose
``results`` map a node id to ``{"value": ...}``. Its PyTorch adapter names each node by the fx node's
``name`` (``model_explorer/pytorch_exported_program_adapter_impl.py``, ``create_node``:
``GraphNode(id=fx_node.name, ...)``), which is the ``name`` dfx's export capture records for the same
node (``docs/export-format.md``, ``nodes[].name``); so the overlays are keyed by dfx's node names.

The format is Model Explorer's ``GraphNodeData`` (``model_explorer/node_data_builder.py``: ``results``
of ``NodeDataResult``, optional ``name``, ``gradient`` of ``GradientItem``), written here as plain
JSON so that no Model Explorer install is needed to write it; its web app reads a file whose top
level holds ``results`` as one graph's data. ``tests/viz/test_explorer.py`` rebuilds each file with
Model Explorer's own classes where the ``explorer`` extra is installed.

Only nodes that do work are keyed: every ``call_function`` node whose category is neither ``view``
nor ``none`` (``docs/cost-model.md``: views move 0 bytes and do 0 FLOPs; ``getitem`` does nothing). Latency is the node's operator
roofline time (``hardware.<id>.nodes.<name>.time_s``), not its kernel's share of the makespan.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from dfx.viz.document import Doc, read_document
from dfx.viz.facts import BOUND_FILL  # the DAG's bound colours, so the two pictures agree

__all__ = ["EXPLORER_METRICS", "explorer_files", "explorer_names", "node_data"]

# metric -> (what the value is, in the overlay's name). FLOPs do not depend on the machine: one file.
EXPLORER_METRICS = {
    "latency": "latency (us)",
    "bound": "bound",
    "intensity": "arithmetic intensity (FLOP/byte)",
    "flops": "FLOPs",
}
_PER_PROFILE = ("latency", "bound", "intensity")
_US_PER_S = 1e6
# white (least) to red (most), Model Explorer's gradient stops 0 and 1 (node_data_builder.GradientItem)
_GRADIENT = [{"stop": 0, "bgColor": "#ffffff"}, {"stop": 1, "bgColor": "#d7301f"}]


def _work_nodes(d: Doc) -> list[str]:
    """Names of the nodes that do work: ``call_function``, not a view, not a no-work node (``getitem``)."""
    return [n.name for n in d.nodes if n.op == "call_function" and n.category not in ("view", "none")]


def _result(metric: str, d: Doc, profile: str | None, name: str) -> dict[str, Any]:
    if metric == "flops":
        return {"value": next(n.flops for n in d.nodes if n.name == name)}
    hw = d.hardware[profile].nodes.get(name)
    if hw is None:  # a node the profile did not time (it was folded away): no value rather than 0
        return {}
    if metric == "latency":
        return {"value": hw.time_s * _US_PER_S}
    if metric == "intensity":
        return {"value": hw.intensity_flop_per_byte}
    bound = str(hw.bound)
    return {"value": bound, "bgColor": BOUND_FILL.get(bound, "#ffffff")}


def node_data(doc: Mapping[str, Any] | Doc, metric: str, profile: str | None = None) -> dict[str, Any]:
    """One Model Explorer ``GraphNodeData`` object (as a dict) for ``metric`` on ``profile``.

    Parameters
    ----------
    doc : dict or Doc
        An export document (``dfx.analysis/1``).
    metric : {"latency", "bound", "intensity", "flops"}
        ``latency``: the node's roofline time in microseconds; ``bound``: ``"memory"``, ``"compute"`` or
        ``"none"`` (a string value, coloured by ``bgColor``); ``intensity``: FLOPs per byte moved;
        ``flops``: the node's FLOPs (no profile).
    profile : str, optional
        A profile id of ``doc`` (required for every metric but ``flops``).

    Returns
    -------
    dict
        ``{"name": ..., "results": {node name: {"value": ...}}, ...}``: keys of Model Explorer's
        ``GraphNodeData``; numeric metrics carry a white-to-red ``gradient``.

    Raises
    ------
    ValueError
        If ``metric`` is unknown, or ``profile`` is missing or not in ``doc``.

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis, example_hardware
    >>> nodes = [{"name": "x", "op": "placeholder"}, {"name": "mm", "inputs": ["x"], "category": "matmul", "flops": 8}]
    >>> doc = example_analysis("m", nodes, {"h": example_hardware({"mm": {"bound": "compute", "time_s": 2e-6}})})
    >>> node_data(doc, "latency", "h")["results"]
    {'mm': {'value': 2.0}}
    >>> node_data(doc, "flops")["results"]
    {'mm': {'value': 8}}
    """
    d = doc if isinstance(doc, Doc) else read_document(doc)
    if metric not in EXPLORER_METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(EXPLORER_METRICS)}")
    if metric != "flops" and profile not in d.hardware:
        raise ValueError(f"profile {profile!r} is not in this analysis (profiles: {', '.join(d.hardware) or 'none'})")
    results = {}
    for name in _work_nodes(d):
        r = _result(metric, d, profile, name)
        if r:
            results[name] = r
    label = EXPLORER_METRICS[metric] if metric == "flops" else f"{profile} {EXPLORER_METRICS[metric]}"
    data: dict[str, Any] = {"name": f"dfx {label}", "results": results}
    if metric != "bound":
        data["gradient"] = _GRADIENT
    return data


def explorer_names(doc: Mapping[str, Any] | Doc) -> list[str]:
    """The file names :func:`explorer_files` writes for ``doc``: ``explorer-<profile>-<metric>.json``
    for latency, bound and intensity, and one ``explorer-flops.json``."""
    d = doc if isinstance(doc, Doc) else read_document(doc)
    return [f"explorer-{p}-{m}.json" for p in d.hardware for m in _PER_PROFILE] + ["explorer-flops.json"]


def explorer_files(doc: Mapping[str, Any] | Doc) -> dict[str, str]:
    """File name -> JSON text of every overlay of ``doc`` (:func:`explorer_names`).

    Load one in Model Explorer's side panel ("Upload node data"), or open the model with all of
    them at once with ``dfx explore MODEL --hw ...``.

    Examples
    --------
    >>> from dfx.schema.analysis import example_analysis, example_hardware
    >>> doc = example_analysis("m", [{"name": "mm"}], {"h": example_hardware({"mm": {}})})
    >>> sorted(explorer_files(doc))
    ['explorer-flops.json', 'explorer-h-bound.json', 'explorer-h-intensity.json', 'explorer-h-latency.json']
    """
    d = doc if isinstance(doc, Doc) else read_document(doc)
    files = {}
    for p in d.hardware:
        for m in _PER_PROFILE:
            files[f"explorer-{p}-{m}.json"] = json.dumps(node_data(d, m, p), indent=1)
    files["explorer-flops.json"] = json.dumps(node_data(d, "flops"), indent=1)
    return files
