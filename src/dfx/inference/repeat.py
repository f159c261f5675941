"""A whole model's graph from the capture of its first two layers: the second layer, repeated.

Capturing a 32-layer model costs 32 times the tracing and shape propagation of one layer, for 32
identical copies. :func:`repeat_layer` instead takes a graph captured with two layers
(``layers.0`` and ``layers.1``) and inserts copies of ``layers.1`` until there are ``count``:
copy ``k`` reads what ``layers.1`` reads, except that where ``layers.1`` reads an output of
``layers.0`` (its input hidden states), copy ``k`` reads the same output of copy ``k - 1``. Nodes
after the layers (final norm, LM head) read the last copy; the graph's ``output`` lists every
copy's outputs (a decode step's new K and V) in layer order. Parameters are copied under
``layers.k.*``, so costs, footprints and folded pictures see ``count`` distinct layers.

This is exact when the layers are identical, as in every GPT-2 and Llama config: the same
operators on the same shapes. The second layer is the template (not the first) because only a
layer with a predecessor shows which of its inputs is the previous layer's output.
"""

from __future__ import annotations

from dataclasses import replace

from dfx.ir import Edge, Graph, Node, ParameterInfo

__all__ = ["repeat_layer"]


def _in_layer(path: str, prefix: str, index: int) -> bool:
    head = f"{prefix}.{index}"
    return path == head or path.startswith(head + ".")


def _layer_nodes(graph: Graph, prefix: str, index: int) -> list[Node]:
    """Nodes of ``prefix.index`` in graph order: its own nodes, and placeholders only it reads."""
    compute = {n.name for n in graph.nodes if n.op != "placeholder" and _in_layer(n.module_path, prefix, index)}
    out = []
    for n in graph.nodes:
        users = graph.users(n.name)
        if n.name in compute or (n.op == "placeholder" and users and all(u in compute for u in users)):
            out.append(n)
    return out


def repeat_layer(graph: Graph, prefix: str, count: int) -> Graph:
    """``graph`` (with layers ``prefix.0`` and ``prefix.1``) with ``prefix.1`` repeated up to ``count`` layers.

    Parameters
    ----------
    graph : Graph
        Captured from the model built with exactly two layers.
    prefix : str
        Module path of the layer list: ``"layers"`` (Llama), ``"h"`` (GPT-2).
    count : int
        Layers wanted, >= 2.

    Returns
    -------
    Graph
        Copy ``k`` (``k = 2 .. count-1``) has node names ``<name>__L<k>`` (a parameter's
        placeholder ``p_layers_k_*``), module paths ``prefix.k.*`` and parameters ``prefix.k.*``.

    Raises
    ------
    ValueError
        If ``count < 2``, or the two captured layers are not the same operators in the same order.
    """
    if count < 2:
        raise ValueError(f"repeat_layer makes >= 2 layers, got count={count}")
    if count == 2:
        return graph
    layer0 = [n for n in _layer_nodes(graph, prefix, 0) if n.op != "placeholder"]
    layer1 = _layer_nodes(graph, prefix, 1)
    body1 = [n for n in layer1 if n.op != "placeholder"]
    if not body1 or [n.target for n in layer0] != [n.target for n in body1]:
        raise ValueError(f"graph {graph.name!r}: {prefix}.0 and {prefix}.1 are not the same operators; cannot repeat")
    in_layer1 = {n.name for n in layer1}
    params_of_layer1 = {n.name for n in layer1 if n.op == "placeholder" and n.input_kind in ("parameter", "buffer")}
    counterpart = {a.name: b.name for a, b in zip(layer0, body1)}  # layer 0 node -> same node in layer 1

    taken = {n.name for n in graph.nodes}

    def name_in(k: int, name: str) -> str:
        """Copy ``k``'s name: a parameter placeholder's ``p_layers_1_*`` becomes ``p_layers_k_*``."""
        if k == 1:
            return name
        flat = f"_{prefix}_1_"
        if name in params_of_layer1 and flat in name:
            renamed = name.replace(flat, f"_{prefix}_{k}_", 1)
            if renamed not in taken:
                return renamed
        return f"{name}__L{k}"

    def copy(node: Node, k: int) -> Node:
        def edge(e: Edge) -> Edge:
            if e.src in in_layer1:
                return Edge(name_in(k, e.src), e.index)
            if e.src in counterpart:  # the previous layer's output
                return Edge(name_in(k - 1, counterpart[e.src]), e.index)
            return e  # shared by every layer (rotary tables, position ids)

        head = f"{prefix}.1"
        path = node.module_path
        return replace(
            node,
            name=name_in(k, node.name),
            module_path=f"{prefix}.{k}{path[len(head) :]}" if _in_layer(path, prefix, 1) else path,
            inputs=tuple(edge(e) for e in node.inputs),
            params=tuple(_rename_param(p, prefix, k) for p in node.params),
        )

    copies = {k: [copy(n, k) for n in layer1] for k in range(2, count)}
    last = count - 1
    placeholders_end = max(i for i, n in enumerate(graph.nodes) if n.op == "placeholder")
    layer_end = max(i for i, n in enumerate(graph.nodes) if n.name in in_layer1)
    nodes: list[Node] = []
    for i, n in enumerate(graph.nodes):
        if i > layer_end:
            n = _reroute(n, in_layer1, count, name_in, last)
        nodes.append(n)
        if i == placeholders_end:
            nodes += [c for k in copies for c in copies[k] if c.op == "placeholder"]
        if i == layer_end:
            nodes += [c for k in copies for c in copies[k] if c.op != "placeholder"]
    params = list(graph.parameters)
    for p in graph.parameters:
        if p.name.startswith(f"{prefix}.1."):
            params += [
                ParameterInfo(
                    _rename_param(p.name, prefix, k),
                    p.spec,
                    p.kind,
                    tuple(_rename_param(a, prefix, k) for a in p.aliases if a.startswith(f"{prefix}.1.")),
                )
                for k in range(2, count)
            ]
    meta = (*graph.meta, ("repeated_layer", f"{prefix}.1 repeated as {prefix}.2 .. {prefix}.{last}"))
    return Graph(tuple(nodes), tuple(params), graph.name, graph.capture_method, meta)


def _rename_param(name: str, prefix: str, k: int) -> str:
    head = f"{prefix}.1."
    return f"{prefix}.{k}.{name[len(head) :]}" if name.startswith(head) else name


def _reroute(node: Node, in_layer1: set[str], count: int, name_in, last: int) -> Node:
    """A node after the layers: read the last copy; the ``output`` node lists every copy's outputs."""
    if not any(e.src in in_layer1 for e in node.inputs):
        return node
    if node.op == "output":
        outside = [e for e in node.inputs if e.src not in in_layer1]
        from_layer = [e for e in node.inputs if e.src in in_layer1]
        per_copy = [Edge(name_in(k, e.src), e.index) for k in range(1, count) for e in from_layer]
        return replace(node, inputs=tuple(outside + per_copy))
    return replace(
        node, inputs=tuple(Edge(name_in(last, e.src), e.index) if e.src in in_layer1 else e for e in node.inputs)
    )
