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

__all__ = ["repeat_layer", "repeat_layers"]


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
        flat = f"_{prefix.replace('.', '_')}_1_"  # a dotted prefix (model.layers) is flat in names
        if name in params_of_layer1 and flat in name:
            renamed = name.replace(flat, f"_{prefix.replace('.', '_')}_{k}_", 1)
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


def repeat_layers(graph: Graph, prefix: str, template: tuple[int, ...]) -> Graph:
    """``graph`` (built layers ``prefix.0 .. prefix.m-1``) as a model whose layer ``k`` copies built layer ``template[k]``.

    For models whose layers are not all alike: Gemma 3's sliding layers and every sixth global
    one, gpt-oss's alternating ones, DeepSeek-V3's dense first layers and MoE others. The phases
    build layer 0 and the first of each kind after it (:func:`dfx.models.decode.template_layers`);
    each model layer then repeats the built layer of its kind. A built layer ``j >= 1`` reads
    exactly one output of built layer ``j - 1`` (its input hidden states); a copy at model layer
    ``k`` reads that output of the copy at ``k - 1`` instead, so layers of different kinds chain.

    Parameters
    ----------
    graph : Graph
        Captured from the model built with ``m = max(template) + 1`` layers.
    prefix : str
        Module path of the layer list (``"layers"``).
    template : tuple of int
        Per model layer, the built layer it repeats; ``template[0] == 0``, each ``template[k] >= 1``
        for ``k >= 1``. ``(0, 1, 1, ...)`` is :func:`repeat_layer`'s case and goes to it.

    Raises
    ------
    ValueError
        A template that does not start at 0 or names a layer not built, or a built layer that reads
        more than the previous layer's hidden states.
    """
    L, m = len(template), max(template, default=0) + 1
    if L < 2 or template[0] != 0 or any(t < 1 for t in template[1:]) or set(template) != set(range(m)):
        raise ValueError(f"repeat_layers needs a template (0, j >= 1, ...) naming every built layer, got {template}")
    if m == 2 and template == (0, *([1] * (L - 1))):
        try:
            return repeat_layer(graph, prefix, L)
        except ValueError:  # layer 0 is of another kind than layer 1 (a dense first layer): chain as below
            pass
    if template == tuple(range(L)):
        return graph
    layer = [_layer_nodes(graph, prefix, j) for j in range(m)]
    names = [{n.name for n in nodes} for nodes in layer]
    in_any = set().union(*names)
    post = [n for n in graph.nodes if n.op != "placeholder" and n.name not in in_any]
    last_body = max(i for i, n in enumerate(graph.nodes) if n.name in names[m - 1])
    after = [n for n in post if graph.nodes.index(n) > last_body]

    def out_edge(j: int) -> Edge:
        """The one output of built layer ``j`` the next layer (or the final norm) reads."""
        readers = layer[j + 1] if j + 1 < m else [n for n in after if n.op != "output"]
        found = {(e.src, e.index) for n in readers for e in n.inputs if e.src in names[j]}
        if len(found) != 1:
            raise ValueError(
                f"graph {graph.name!r}: {prefix}.{j + 1} reads {len(found)} outputs of {prefix}.{j}, not 1"
            )
        return Edge(*found.pop())

    outs = [out_edge(j) for j in range(m)]
    params_of = [
        {n.name for n in nodes if n.op == "placeholder" and n.input_kind in ("parameter", "buffer")} for nodes in layer
    ]

    def name_at(k: int, name: str) -> str:
        j = template[k]
        if k == j:
            return name
        flat = f"_{prefix.replace('.', '_')}_{j}_"  # a dotted prefix (model.layers) is flat in names
        if name in params_of[j] and flat in name:
            return name.replace(flat, f"_{prefix.replace('.', '_')}_{k}_", 1)
        return f"{name}__L{k}"

    def copy(node: Node, k: int) -> Node:
        j = template[k]

        def edge(e: Edge) -> Edge:
            if e.src in names[j]:
                return Edge(name_at(k, e.src), e.index)
            if e.src in in_any:  # the previous layer's hidden states, from the copy at k - 1
                prev = outs[template[k - 1]]
                return Edge(name_at(k - 1, prev.src), prev.index)
            return e

        path = node.module_path
        head = f"{prefix}.{j}"
        return replace(
            node,
            name=name_at(k, node.name),
            module_path=f"{prefix}.{k}{path[len(head) :]}" if _in_layer(path, prefix, j) else path,
            inputs=tuple(edge(e) for e in node.inputs),
            params=tuple(_move_param(p, prefix, j, k) for p in node.params),
        )

    copies = [copy(n, k) for k in range(1, L) for n in layer[template[k]]]
    built_later = set().union(*names[1:])
    last_out = outs[template[L - 1]]
    nodes: list[Node] = []
    placeholders_end = max(i for i, n in enumerate(graph.nodes) if n.op == "placeholder")
    layer0_end = max(i for i, n in enumerate(graph.nodes) if n.name in names[0])
    for i, n in enumerate(graph.nodes):
        if n.name in built_later:
            continue
        if i > last_body:
            n = _reroute_to(n, names, template, name_at, outs, last_out, L)
        nodes.append(n)
        if i == placeholders_end:
            nodes += [c for c in copies if c.op == "placeholder"]
        if i == layer0_end:
            nodes += [c for c in copies if c.op != "placeholder"]
    params = [p for p in graph.parameters if not any(p.name.startswith(f"{prefix}.{j}.") for j in range(1, m))]
    for k in range(1, L):
        j = template[k]
        params += [
            ParameterInfo(
                _move_param(p.name, prefix, j, k),
                p.spec,
                p.kind,
                tuple(_move_param(a, prefix, j, k) for a in p.aliases if a.startswith(f"{prefix}.{j}.")),
            )
            for p in graph.parameters
            if p.name.startswith(f"{prefix}.{j}.")
        ]
    meta = (*graph.meta, ("repeated_layer", f"{prefix}.0 .. {prefix}.{L - 1} from built layers {template}"))
    return Graph(tuple(nodes), tuple(params), graph.name, graph.capture_method, meta)


def _move_param(name: str, prefix: str, j: int, k: int) -> str:
    head = f"{prefix}.{j}."
    return f"{prefix}.{k}.{name[len(head) :]}" if name.startswith(head) else name


def _reroute_to(node: Node, names, template, name_at, outs, last_out: Edge, L: int) -> Node:
    """A node after the layers: read the last model layer; the ``output`` node lists every layer's outputs."""
    later = set().union(*names[1:])
    if not any(e.src in later for e in node.inputs):
        return node
    if node.op == "output":
        outside = [e for e in node.inputs if e.src not in later]
        per_layer = [
            Edge(name_at(k, e.src), e.index) for k in range(1, L) for e in node.inputs if e.src in names[template[k]]
        ]
        return replace(node, inputs=tuple(outside + per_layer))
    last = Edge(name_at(L - 1, last_out.src), last_out.index)
    return replace(node, inputs=tuple(last if e.src in later else e for e in node.inputs))
