"""Read Graphviz SVG: node and edge groups with their title, classes and fill."""

from __future__ import annotations

import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def groups(svg_text: str, kind: str) -> dict[str, dict]:
    """``kind`` ("node" or "edge") -> {title: {"classes": set, "fill": str or None}}."""
    root = ET.fromstring(svg_text)
    out = {}
    for g in root.iter(f"{SVG}g"):
        classes = set((g.get("class") or "").split())
        if kind not in classes:
            continue
        title = g.find(f"{SVG}title").text
        shape = next(
            (
                el
                for el in g.iter()
                if el.tag in (f"{SVG}path", f"{SVG}polygon") and el.get("fill") not in (None, "none")
            ),
            None,
        )
        out[title] = {"classes": classes, "fill": shape.get("fill") if shape is not None else None}
    return out
