"""Render every picture of an export document, and write them safely into a folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dfx.errors import DfxError
from dfx.viz.document import Doc, read_document
from dfx.viz.dot import GraphvizTimeout, render_dot, to_dot
from dfx.viz.graph import Level, build_display_graph
from dfx.viz.html import render_html
from dfx.viz.roofline import render_roofline
from dfx.viz.svgdag import dag_png as draw_png
from dfx.viz.svgdag import dag_svg, draw_dag
from dfx.viz.simdoc import SimDoc, check_matches, read_simulation
from dfx.viz.timeline import timeline_context
from dfx.viz.valdoc import ValDoc, check_same_model, read_validation
from dfx.viz.validation import validation_context

__all__ = ["Pictures", "picture_names", "render_pictures", "render_report", "write_pictures"]


@dataclass(frozen=True)
class Pictures:
    """File name -> contents (text or PNG bytes), and notes for the user (e.g. a `dot` stopped past its budget)."""

    files: dict[str, str | bytes]
    notes: tuple[str, ...] = field(default=())


def _profile_id(alias: str) -> str:
    """A shipped profile's id for an alias (``h100`` -> ``nvidia-h100-sxm``); the alias itself if unknown."""
    try:
        from dfx.hardware import load_profile

        return load_profile(alias).id
    except Exception:
        return alias


def _color_by(doc: Doc, color_by: str | None) -> str | None:
    if color_by is None:
        return next(iter(doc.hardware), None)
    if color_by not in doc.hardware:
        color_by = _profile_id(color_by)
    if color_by not in doc.hardware:
        known = ", ".join(doc.hardware) or "none"
        raise DfxError(f"--color-by {color_by!r} is not a profile in this analysis (profiles: {known})")
    return color_by


def picture_names(doc: Mapping[str, Any] | Doc, graphviz: bool = True) -> list[str]:
    """The files :func:`render_pictures` makes for ``doc``: known before any drawing.

    ``dag.svg`` and ``dag.png`` are always made: by Graphviz where ``dot`` is installed (and
    ``graphviz``), else by dfx's own layered layout; ``graphviz`` is kept for callers that pass it.
    """
    d = doc if isinstance(doc, Doc) else read_document(doc)
    names = ["dag.dot", "dag.svg", "dag.png"]
    return names + (["roofline.png", "roofline.svg"] if d.hardware else []) + ["report.html"]


def _sim_doc(d: Doc, simulation: Mapping[str, Any] | SimDoc | None) -> SimDoc | None:
    if simulation is None:
        return None
    sim = simulation if isinstance(simulation, SimDoc) else read_simulation(simulation)
    check_matches(sim, d)
    return sim


def _val_doc(validation: Mapping[str, Any] | ValDoc | None) -> ValDoc | None:
    if validation is None or isinstance(validation, ValDoc):
        return validation
    return read_validation(validation)


def _render(
    d: Doc,
    color_by: str | None,
    level: Level | str,
    graphviz: bool,
    sim: SimDoc | None,
    dag_png: bool,
    val: ValDoc | None = None,
) -> Pictures:
    if color_by is None and sim is not None and sim.hardware in d.hardware:
        color_by = sim.hardware  # the simulated profile: the DAG and the timeline share its colours
    hw_id = _color_by(d, color_by)
    graph = build_display_graph(d, level)
    dot_text = to_dot(d, graph, hw_id)
    files: dict[str, str | bytes] = {"dag.dot": dot_text}
    notes = []
    try:
        svg = render_dot(dot_text, "svg") if graphviz else None
        png = (render_dot(dot_text, "png") or b"") if svg is not None and dag_png else None
    except GraphvizTimeout as exc:  # a layout past its budget: dfx lays it out instead, and says so
        svg = png = None
        notes.append(str(exc))
    if svg is None:  # no `dot` (or a stopped one): dfx's own layered layout, SVG and PNG
        drawing = draw_dag(d, graph, hw_id)
        svg, png = dag_svg(drawing).encode("utf-8"), draw_png(drawing) if dag_png else None
    files["dag.svg"] = svg.decode("utf-8")
    if png is not None:
        files["dag.png"] = png
    roof = render_roofline(d)
    if roof is not None:
        files["roofline.png"], files["roofline.svg"] = roof.png, roof.svg
    note = f"Coloured by bound on {hw_id}; critical path bold." if hw_id else "No profile: nodes are not coloured."
    if graph.folds:
        note += " Repeated layers drawn once: " + ", ".join(f.label for f in graph.folds) + "."
    if graph.unused_inputs:
        shown = ", ".join(graph.unused_inputs[:3]) + (", ..." if len(graph.unused_inputs) > 3 else "")
        note += f" {len(graph.unused_inputs)} buffer(s) or parameter(s) no node reads are not drawn ({shown})."
    timeline = timeline_context(sim, d, hw_id) if sim is not None else None
    if val is not None:
        check_same_model(val, d)
    validation = validation_context(val, d) if val is not None else None
    files["report.html"] = render_html(
        d, graph, files.get("dag.svg"), dot_text, roof.png if roof else None, note, timeline, validation
    )
    return Pictures(files, tuple(notes))


def render_pictures(
    doc: Mapping[str, Any] | Doc,
    *,
    color_by: str | None = None,
    level: Level | str = Level.OP,
    graphviz: bool = True,
    simulation: Mapping[str, Any] | SimDoc | None = None,
    validation: Mapping[str, Any] | ValDoc | None = None,
) -> Pictures:
    """The DAG (``dag.dot``, ``dag.svg``, ``dag.png``), roofline (``roofline.png``, ``.svg``) and ``report.html``.

    Parameters
    ----------
    doc : dict or Doc
        An export document (schema ``dfx.analysis/1``), e.g. ``Analysis.to_dict()``.
    color_by : str, optional
        The profile whose bounds colour the DAG (and the timeline's bars) and whose critical path is
        drawn bold; default the simulated profile when a simulation of one in ``doc`` is given, else
        the first.
    level : {"op", "module"}
        One box per node, or one per run of a module's nodes. Repeated layers are folded at both.
    graphviz : bool
        Lay out the DAG with the ``dot`` binary when it is installed; without it (or when false, or
        when ``dot`` runs past its budget) dfx lays it out itself (:mod:`dfx.viz.layout`, drawn by
        :mod:`dfx.viz.svgdag`): ``dag.svg`` and ``dag.png`` are always written.
    simulation : dict or SimDoc, optional
        A simulation document (schema ``dfx.simulation/1``) of this analysis, e.g.
        ``SimulationResult.to_dict()``: ``report.html`` then gains a Timeline section (a Gantt chart
        per policy as inline SVG, makespans beside the lower bounds, utilization per PE).
    validation : dict or ValDoc, optional
        A validation document (schema ``dfx.validation/1``, ``dfx validate --json`` or its
        ``validation.json``) of this model: ``report.html`` then gains a "Predicted vs measured"
        section (the log-log scatter of predicted against measured seconds as inline SVG, one point
        with a tooltip per counted node, the error figures and the per-category table). Node names
        that do not match the analysis' are counted in a one-line note, not refused.

    Raises
    ------
    DfxError
        If a document has the wrong schema or lacks a field, ``color_by`` is not one of its
        profiles, or the simulation schedules nodes the analysis lacks.
    """
    d = doc if isinstance(doc, Doc) else read_document(doc)
    return _render(d, color_by, level, graphviz, _sim_doc(d, simulation), dag_png=True, val=_val_doc(validation))


def render_report(
    doc: Mapping[str, Any] | Doc,
    *,
    color_by: str | None = None,
    level: Level | str = Level.OP,
    graphviz: bool = True,
    simulation: Mapping[str, Any] | SimDoc | None = None,
    validation: Mapping[str, Any] | ValDoc | None = None,
) -> Pictures:
    """Only ``report.html`` (its ``files`` has that one entry): what ``dfx simulate --out`` writes.

    The parameters are :func:`render_pictures`'; the DAG's PNG is never drawn.
    """
    d = doc if isinstance(doc, Doc) else read_document(doc)
    pictures = _render(d, color_by, level, graphviz, _sim_doc(d, simulation), dag_png=False, val=_val_doc(validation))
    return Pictures({"report.html": pictures.files["report.html"]}, pictures.notes)


def write_pictures(
    doc: Mapping[str, Any] | Doc,
    out_dir: str | Path,
    *,
    force: bool = False,
    color_by: str | None = None,
    level: Level | str = Level.OP,
    simulation: Mapping[str, Any] | SimDoc | None = None,
    validation: Mapping[str, Any] | ValDoc | None = None,
) -> tuple[list[Path], tuple[str, ...]]:
    """Render and write every picture into ``out_dir``; nothing is written if any target exists without ``force``.

    ``simulation`` (a ``dfx.simulation/1`` document) adds the Timeline section to ``report.html``,
    ``validation`` (a ``dfx.validation/1`` document) the "Predicted vs measured" section; see
    :func:`render_pictures`. Returns the paths written and the notes for the user.

    Raises
    ------
    DfxError
        As :func:`render_pictures`, or if a target exists and ``force`` is false (nothing is written).
    """
    from dfx.report.files import check_targets, write_outputs

    d = doc if isinstance(doc, Doc) else read_document(doc)
    sim, val = _sim_doc(d, simulation), _val_doc(validation)
    check_targets(out_dir, picture_names(d), force=force)
    pictures = render_pictures(d, color_by=color_by, level=level, simulation=sim, validation=val)
    return write_outputs(out_dir, pictures.files, force=force), pictures.notes
