"""Which tensors of a captured graph a decoder keeps in its KV cache, found from the graph's structure.

A decoder caches, per attention layer, the key and value it computed (after projection and rotary
positions) so later tokens need not recompute them. In a captured graph they are found in three steps:

1. **Attentions.** A ``scaled_dot_product_attention`` node (any overload) gives ``q, k, v[, mask]``
   from its operands. An *eager* attention (``attn_implementation="eager"``, nanoGPT's manual path)
   is ``scores = q @ kᵀ`` then elementwise scale/mask ops, a ``softmax``, an optional dropout or
   cast, and ``probs @ v``: found by walking back from each softmax to a matmul of two activations
   and forward to the matmul it feeds.
2. **Causality.** An attention is a decoder's self-attention when ``is_causal=True``, when its mask
   (an SDPA mask operand, or a tensor added / ``masked_fill``-ed / ``where``-d into the scores) is
   built from ``tril``/``triu``, from a comparison of two position ranges (``kv_idx <= q_idx``:
   transformers' mask functions, sliding windows included), or from a square buffer (a registered
   causal mask, nanoGPT's ``bias``). A padding-only mask (BERT's ``ge(idx, 0)``) is not causal. A
   non-causal attention whose query descends from a causal attention's output is a decoder's
   *cross-attention*: its key and value (over the encoder's tokens) are cached too. Attention that
   no causal attention precedes (an encoder, a vision tower) keeps no cache.
3. **The cached tensor.** From the attention's key (value) operand, walk back through layout ops
   (view, reshape, expand, unsqueeze, transpose, clone, repeat_interleave, casts) and keep the
   smallest tensor met. GQA's ``repeat_kv`` (unsqueeze, expand, reshape) therefore counts the
   ``n_kv_heads`` tensor, not the expanded ``n_heads`` one (a group factor too many), and MQA's one
   head likewise. Tensors are counted once however many attentions read them.

NB: the counted tokens are those of the captured call (a rolling sliding-window cache of ``w``
tokens holds ``min(T, w)``). An attention whose mask is built in a way none of the rules sees
(a float mask passed in as a model input) counts as non-causal.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from dfx.ir import Edge, Graph, Node, TensorSpec

__all__ = ["CachedAttention", "cached_attentions", "kv_cache_bytes"]

_SDPA = "scaled_dot_product"
_MATMUL = frozenset({"matmul", "bmm", "mm", "__matmul__"})
_SOFTMAX = frozenset({"softmax", "_softmax", "_safe_softmax"})
# Ops between q @ kᵀ and softmax: scale, mask, soft-cap, dtype casts, attention sinks (cat).
_SCORE = frozenset(
    {
        "cat",
        "add",
        "sub",
        "mul",
        "div",
        "truediv",
        "masked_fill",
        "where",
        "to",
        "_to_copy",
        "type_as",
        "float",
        "tanh",
        "clamp",
        "__add__",
        "__mul__",
        "__truediv__",
    }
)
# Ops between softmax and probs @ v.
_PROBS = frozenset(
    {"dropout", "native_dropout", "getitem", "slice", "to", "_to_copy", "type_as", "clone", "contiguous"}
)  # slice: gpt-oss drops its sink column
# Ops that change a tensor's layout or width but not which values it holds.
_LAYOUT = frozenset(
    {
        "view",
        "reshape",
        "_unsafe_view",
        "expand",
        "expand_as",
        "unsqueeze",
        "squeeze",
        "transpose",
        "permute",
        "t",
        "clone",
        "contiguous",
        "repeat_interleave",
        "repeat",
        "alias",
        "detach",
        "flatten",
        "unflatten",
        "movedim",
        "swapaxes",
        "to",
        "_to_copy",
        "type_as",
    }
)
_COMPARE = frozenset({"le", "lt", "ge", "gt", "__le__", "__lt__", "__ge__", "__gt__"})
_TRIANGLE = frozenset({"tril", "triu", "tril_", "triu_"})
_MASK_SEARCH_NODES = 400  # ancestors examined per mask: a mask is built in tens of nodes


@dataclass(frozen=True)
class CachedAttention:
    """One attention whose key and value a decoder caches.

    ``key`` and ``value`` are the cached tensors (the smallest layout-equivalent producers of the
    attention's operands); ``head_dim`` is the query's last dimension; ``tokens`` the key length.
    """

    node: str
    key: Edge
    value: Edge
    key_spec: TensorSpec
    value_spec: TensorSpec
    head_dim: int
    tokens: int
    cross: bool = False

    @property
    def kv_heads(self) -> int:
        """Heads the cache holds: ``numel(K) / (batch * tokens * head_dim)``, batch from the key's leading dims."""
        per_head = self.tokens * self.head_dim
        return max(1, self.key_spec.numel // per_head // self._batch) if per_head else 0

    @property
    def _batch(self) -> int:
        return self.key_spec.shape[0] if self.key_spec.ndim >= 4 else 1


def _op(node: Node) -> str:
    """The operator's bare name: ``aten.view.default`` -> ``view``; ``torch.matmul`` -> ``matmul``."""
    t = node.target
    if t.startswith("aten."):
        return t.split(".")[1]
    return t.rsplit(".", 1)[-1]


def _tensor_edges(graph: Graph, node: Node) -> list[Edge]:
    return [e for e in node.inputs if e.index < len(graph.node(e.src).outputs)]


def _spec(graph: Graph, edge: Edge) -> TensorSpec:
    return graph.node(edge.src).outputs[edge.index]


def _is_activation_matmul(graph: Graph, node: Node) -> bool:
    """A matmul of two activations (neither operand a weight): attention's, not a projection's."""
    if _op(node) not in _MATMUL or node.params:
        return False
    edges = _tensor_edges(graph, node)
    return len(edges) == 2 and all(
        graph.node(e.src).input_kind not in ("parameter", "buffer", "constant") for e in edges
    )


def _eager_attention(graph: Graph, softmax: Node) -> tuple[Edge, Edge, Edge, list[Edge], Node] | None:
    """(q, kᵀ, v, mask operands, probs @ v node) around ``softmax``, or None if it is no attention's."""
    masks: list[Edge] = []
    edge = _tensor_edges(graph, softmax)[0] if softmax.inputs else None
    scores = None
    while edge is not None:
        node = graph.node(edge.src)
        if _is_activation_matmul(graph, node):
            scores = node
            break
        if _op(node) not in _SCORE:
            return None
        ins = _tensor_edges(graph, node)
        # the scores: the largest floating operand (a where's bool condition can be as large)
        chain = max(ins, key=lambda e: (_spec(graph, e).dtype != "bool", _spec(graph, e).numel), default=None)
        masks += [e for e in ins if e != chain]
        edge = chain
    if scores is None:
        return None
    q, kt = _tensor_edges(graph, scores)
    frontier, seen = deque([softmax.name]), {softmax.name}
    while frontier:
        for user in graph.users(frontier.popleft()):
            u = graph.node(user)
            if _is_activation_matmul(graph, u) and _tensor_edges(graph, u)[0].src in seen:
                return q, kt, _tensor_edges(graph, u)[1], masks, u
            if _op(u) in _PROBS and user not in seen:
                seen.add(user)
                frontier.append(user)
    return None


def _ancestors(graph: Graph, edge: Edge, limit: int = _MASK_SEARCH_NODES) -> list[Node]:
    out, frontier, seen = [], deque([edge.src]), {edge.src}
    while frontier and len(out) < limit:
        node = graph.node(frontier.popleft())
        out.append(node)
        for e in node.inputs:
            if e.src not in seen:
                seen.add(e.src)
                frontier.append(e.src)
    return out


def _has_arange(graph: Graph, edge: Edge) -> bool:
    return any(_op(n) == "arange" for n in _ancestors(graph, edge))


def _is_causal_mask(graph: Graph, mask: Edge) -> bool:
    """Whether ``mask`` compares query and key positions (see the module notes)."""
    for node in _ancestors(graph, mask):
        op = _op(node)
        if op in _TRIANGLE:
            return True
        if op in _COMPARE:
            ins = _tensor_edges(graph, node)
            if len(ins) == 2 and all(_has_arange(graph, e) for e in ins):
                return True
        if node.op in ("placeholder", "get_attr") and node.input_kind in ("buffer", "constant") and node.outputs:
            shape = node.outputs[0].shape
            if len(shape) >= 2 and shape[-1] == shape[-2] > 1:
                return True
    return False


def _sdpa_flag_causal(node: Node) -> bool:
    args = [a.strip() for a in node.args_repr.split(",")]
    return "is_causal=True" in node.args_repr or (len(args) > 5 and args[5] == "True")


def _smallest_producer(graph: Graph, edge: Edge) -> Edge:
    """Walk back through layout ops from ``edge``; the smallest tensor met (the first, on ties)."""
    best, best_bytes = edge, _spec(graph, edge).nbytes
    node = graph.node(edge.src)
    while _op(node) in _LAYOUT and node.op != "placeholder":
        ins = _tensor_edges(graph, node)
        if not ins:
            break
        edge = ins[0]
        node = graph.node(edge.src)
        size = _spec(graph, edge).nbytes
        if size < best_bytes:
            best, best_bytes = edge, size
    return best


def _attentions(graph: Graph) -> list[tuple[Node, Edge, Edge, Edge, bool, int]]:
    """(node, q, k, v, causal, tokens) for every attention, in graph order."""
    found = []
    for node in graph.nodes:
        op = _op(node)
        if _SDPA in node.target:
            ins = _tensor_edges(graph, node)
            if len(ins) < 3:
                continue
            q, k, v = ins[:3]
            causal = (
                _sdpa_flag_causal(node)
                or any(c.op.startswith("aten.tril") for c in node.aten_calls)
                or (len(ins) > 3 and _is_causal_mask(graph, ins[3]))
            )
            k_spec = _spec(graph, k)
            found.append((node, q, k, v, causal, k_spec.shape[-2] if k_spec.ndim >= 2 else 1))
        elif op in _SOFTMAX:
            eager = _eager_attention(graph, node)
            if eager is None:
                continue
            q, kt, v, masks, _ = eager
            causal = any(_is_causal_mask(graph, m) for m in masks)
            found.append((node, q, kt, v, causal, node.outputs[0].shape[-1] if node.outputs else 1))
    return found


def _descendants(graph: Graph, roots: set[str]) -> set[str]:
    out = set(roots)
    for node in graph.nodes:  # topological order: one pass
        if node.name not in out and any(e.src in out for e in node.inputs):
            out.add(node.name)
    return out


def cached_attentions(graph: Graph) -> list[CachedAttention]:
    """The attentions of ``graph`` whose key and value a decoder caches (see the module notes).

    Returns
    -------
    list of CachedAttention
        In graph order: causal self-attentions, and cross-attentions whose query descends from one.
    """
    found = _attentions(graph)
    after_causal = _descendants(graph, {n.name for n, *_, causal, _t in found if causal})
    out = []
    for node, q, k, v, causal, tokens in found:
        cross = not causal and q.src in after_causal
        if not (causal or cross):
            continue
        key, value = _smallest_producer(graph, k), _smallest_producer(graph, v)
        q_spec = _spec(graph, q)
        out.append(
            CachedAttention(
                node.name,
                key,
                value,
                _spec(graph, key),
                _spec(graph, value),
                q_spec.shape[-1] if q_spec.ndim else 1,
                tokens,
                cross,
            )
        )
    return out


def kv_cache_bytes(graph: Graph) -> int:
    """Bytes of every cached key and value tensor of ``graph``, each tensor once.

    Examples
    --------
    A GQA layer of 8 query and 2 KV heads of 8, 16 tokens, fp32, with ``repeat_kv`` expansion and an
    explicit mask counts ``2 * 1 * 2 * 8 * 16 * 4 = 2,048`` bytes (``tests/arch/memory/test_kv_cache.py``).
    """
    tensors: dict[Edge, int] = {}
    for att in cached_attentions(graph):
        tensors[att.key] = att.key_spec.nbytes
        tensors[att.value] = att.value_spec.nbytes
    return sum(tensors.values())
