"""Print a guard report or a bucket plan as readable text (from their ``to_dict`` documents)."""

from __future__ import annotations

from typing import Any

__all__ = ["guards_text", "buckets_text"]

_GROUP_TITLES = {
    "input": "Inputs (TENSOR_MATCH and friends)",
    "shape": "Symbolic shape relations (ShapeEnv)",
    "global": "Global state",
    "object": "Objects Dynamo read (ids, types)",
}
_MAX_OBJECT_LINES = 8  # the object group can hold hundreds of ID_MATCH guards for a large module


def guards_text(doc: dict[str, Any]) -> str:
    """The ``dfx.guards/1`` document as grouped, readable lines."""
    lines = [
        f"guards of {doc['model']} (torch {doc['torch_version']}): {len(doc['guards'])} guards, {doc['graphs']} graph(s)"
    ]
    for i in doc["inputs"]:
        shape = "(" + ", ".join(map(str, i["shape"])) + ")"
        lines.append(
            f"  input {i['name']}: shape {shape} stride {tuple(i['stride'])} {i['dtype']} on {i['device']}, "
            f"requires_grad={i['requires_grad']}"
        )
    for s in doc["symbols"]:
        hi = "inf" if s["max"] is None else s["max"]
        lines.append(f"  symbol {s['symbol']} = {s['source']} in [{s['min']}, {hi}]")
    for group, title in _GROUP_TITLES.items():
        members = [g for g in doc["guards"] if g["group"] == group]
        if not members:
            continue
        lines.append(f"{title}: {len(members)}")
        shown = members if group != "object" else members[:_MAX_OBJECT_LINES]
        for g in shown:
            mark = "  [0/1 specialisation]" if g["zero_one"] else ""
            sym = f"   ({g['symbolic']})" if g["symbolic"] and g["symbolic"] != g["text"] else ""
            lines.append(f"  {g['kind']}: {g['text']}{sym}{mark}")
        if len(shown) < len(members):
            lines.append(f"  ... {len(members) - len(shown)} more (see --json)")
    lines.append(f"Graph breaks: {len(doc['graph_breaks'])}")
    lines += [f"  x{b['count']} {b['reason']}" for b in doc["graph_breaks"]]
    lines += [f"warning: {w}" for w in doc["warnings"]]
    if "check" in doc:
        c = doc["check"]
        shapes = ", ".join(f"{i['name']}{tuple(i['shape'])} {i['dtype']}" for i in c["inputs"])
        verdict = (
            "passes every guard: the compiled graph is reused" if c["passes"] else "fails, so Dynamo would recompile:"
        )
        lines.append(f"check {shapes}: {verdict}")
        lines += [f"  failed: {f}" for f in c["failed"]]
    return "\n".join(lines)


def buckets_text(doc: dict[str, Any]) -> str:
    """The ``dfx.buckets/1`` document as a per-bucket table plus totals."""
    has_model = "padded_flops" in doc
    head = f"{'bucket':>8} {'inputs':>8} {'tokens':>10} {'padded':>10} {'waste':>7}"
    lines = [
        f"{doc['method']}: buckets {doc['buckets']} ({doc['graphs']} graphs to compile, {doc['graphs_used']} used)",
        head + (f" {'FLOP waste':>10}" if has_model else ""),
    ]
    for r in doc["per_bucket"]:
        row = f"{r['size']:>8} {r['count']:>8} {r['tokens']:>10} {r['padded_tokens']:>10} {r['waste_fraction']:>7.1%}"
        if has_model:
            frac = r["waste_flops"] / r["padded_flops"] if r["padded_flops"] else 0.0
            row += f" {frac:>10.1%}"
        lines.append(row)
    lines.append(
        f"total: {doc['inputs']} inputs, {doc['tokens']} tokens padded to {doc['padded_tokens']}: "
        f"waste {doc['waste_tokens']} tokens ({doc['waste_fraction']:.1%})"
    )
    if has_model:
        lines.append(
            f"model {doc['model']['name']} on {doc['model']['hardware']}: {doc['padded_flops']:.4g} FLOPs, "
            f"waste {doc['waste_flops']:.4g} ({doc['waste_flops_fraction']:.1%}); predicted "
            f"{doc['predicted_time_s']:.4g} s vs {doc['useful_time_s']:.4g} s unpadded"
        )
    if "compare" in doc:
        c = doc["compare"]
        extra = f", FLOP waste {c['waste_flops_fraction']:.1%}" if "waste_flops_fraction" in c else ""
        lines.append(
            f"vs {c['method']} {c['buckets']}: waste {c['waste_tokens']} tokens ({c['waste_fraction']:.1%}){extra}, "
            f"{c['graphs']} graphs"
        )
    return "\n".join(lines)
