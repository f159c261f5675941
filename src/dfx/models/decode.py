"""Inference steps of causal decoders: a prefill of T prompt tokens, or a decode step over a KV cache.

``build_step`` makes the model and example inputs of one step, for the built-in transformer layers
(``gpt2-block``, ``llama-layer``, ``llama3-8b-layer``) and ``hf:`` GPT-2 and Llama configs (built
with dfx's own implementations, which have the same parameters and FLOPs as transformers', see
``docs/models.md``). A decode step's inputs are the new tokens and every layer's K and V cache,
``(B, nkv, S, hs)`` each: the cache is an input of the captured graph, read by the attention.

``layers`` builds a whole model with fewer layers than its config (the phases capture two layers
and repeat the second in the graph, :mod:`dfx.inference.repeat`); :class:`StepSpec` says how many
the config has.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn as nn

from dfx.errors import ModelSpecError
from dfx.models import gpt2, llama
from dfx.models.decoder import Decoder, DecoderConfig
from dfx.models.families import FAMILIES, decoder_config
from dfx.models.hf import _DFX_BUILDERS, _check_seq, load_config
from dfx.models.moe import check_expert_dtype
from dfx.models.registry import PRESETS
from dfx.models.spec import ModelSpec, check_positive, check_tokens, parse_dtype

__all__ = [
    "DECODER_BUILTINS",
    "KVGeometry",
    "StepSpec",
    "build_step",
    "family_geometry",
    "kv_geometry",
    "template_layers",
]

# Built-ins that are one layer of a causal decoder (the others are encoders or not transformers).
DECODER_BUILTINS = ("gpt2-block", "llama-layer", "llama3-8b-layer")
_HF_PREFIX = "hf:"
_DECODERS = f"use a built-in {', '.join(DECODER_BUILTINS)}, or an hf: config of a causal decoder (dfx models)"


@dataclass(frozen=True)
class KVGeometry:
    """What one token adds to the KV cache, per layer.

    GQA and MHA layers cache K and V: ``2 * n_kv_heads * head_dim`` elements per token (``head_dim``
    explicit where the config names it, as in Qwen3 and Gemma). MLA layers (DeepSeek-V3) cache one
    latent of ``latent_dim = kv_lora_rank + qk_rope_head_dim`` elements per token
    (arXiv 2405.04434, section 2.1.2). A sliding-window layer keeps at most ``window`` tokens
    (``windows[i]``, None for full attention). ``layer_prefix`` is the module path of the layer list
    (``layers`` in Llama, ``h`` in GPT-2; ``""`` for a single built-in layer). ``layer_kinds`` says
    which layers share a graph (attention type, MoE or dense), for the repeat of captured layers.
    """

    n_layers: int
    n_kv_heads: int
    head_dim: int
    layer_prefix: str = ""
    windows: tuple[int | None, ...] = ()  # per layer; () is full attention everywhere
    latent_dim: int = 0  # > 0: MLA's latent cache, one tensor per layer
    layer_kinds: tuple[object, ...] = ()  # per layer; () is every layer alike

    def layer_elements_per_token(self) -> int:
        """One layer's cache elements per token: ``latent_dim`` (MLA) or ``2 * n_kv_heads * head_dim``
        (:func:`dfx.ir.kv.layer_elements_per_token`)."""
        from dfx.ir.kv import layer_elements_per_token

        return layer_elements_per_token(self.n_kv_heads, self.head_dim, self.latent_dim)

    def elements_per_token(self) -> int:
        """Every layer's cache elements per token (no window reached): ``n_layers * layer_elements_per_token()``.

        >>> KVGeometry(32, 8, 128).elements_per_token()  # Llama-3-8B: 2 * 32 * 8 * 128
        65536
        >>> KVGeometry(61, 128, 192, latent_dim=576).elements_per_token()  # DeepSeek-V3: 61 * (512 + 64)
        35136
        """
        return self.n_layers * self.layer_elements_per_token()

    def window(self, layer: int) -> int | None:
        return self.windows[layer] if self.windows else None

    def cached_tokens(self, layer: int, tokens: int) -> int:
        """Tokens layer ``layer`` keeps of ``tokens``: ``min(tokens, window)`` on a sliding layer."""
        from dfx.ir.kv import kept_tokens

        return kept_tokens(self.window(layer), tokens)

    def cache_elements(self, tokens: int) -> int:
        """Elements the cache of one sequence holds after ``tokens`` tokens, window by window.

        >>> KVGeometry(2, 1, 4, windows=(3, None)).cache_elements(10)  # 8 * 3 + 8 * 10
        104
        """
        from dfx.ir.kv import cached_layer_tokens

        return self.layer_elements_per_token() * cached_layer_tokens(self.n_layers, self.windows, tokens)


@dataclass(frozen=True)
class StepSpec:
    """One step's model and inputs, and the decoder's geometry.

    ``spec.args`` is ``(tokens,)`` for a prefill and ``(tokens, *caches)`` (built-in layers) or
    ``(input_ids, [k_0, v_0, ...])`` (``hf:``) for a decode step. ``geometry.n_layers`` is the
    whole model's layer count; ``built_layers`` how many ``spec.model`` has.
    """

    spec: ModelSpec
    geometry: KVGeometry
    built_layers: int
    tokens: int  # new tokens this step processes (the prompt in a prefill, 1 in a decode step)
    kv_len: int  # cached tokens the step reads (0 in a prefill)
    template: tuple[int, ...] = ()  # per model layer, the built layer it repeats; () is (0, 1, 1, ...)


def kv_geometry(model: nn.Module, layer_prefix: str = "") -> KVGeometry:
    """Layers, KV heads and head size of a GPT-2 or Llama module (a layer or a whole model).

    Raises
    ------
    ModelSpecError
        If ``model`` has no causal self-attention dfx knows (an encoder, a CNN).
    """
    found: list[tuple[int, int]] = []
    for m in model.modules():
        if isinstance(m, llama.Attention):
            found.append((m.n_kv_heads, m.head_dim))
        elif isinstance(m, gpt2.CausalSelfAttention) and m.causal:
            found.append((m.n_head, m.c_attn.in_features // m.n_head))
    if not found:
        raise ModelSpecError(f"phases need a causal decoder: this model has no causal self-attention ({_DECODERS})")
    return KVGeometry(len(found), found[0][0], found[0][1], layer_prefix)


def build_step(
    spec: str,
    *,
    batch: int = 1,
    tokens: int = 1,
    kv_len: int = 0,
    dtype: str | torch.dtype = "bfloat16",
    layers: int | None = None,
    device: str | torch.device = "meta",
    logits_to_keep: int | None = None,
) -> StepSpec:
    """The model and inputs of one inference step: ``tokens`` new tokens after ``kv_len`` cached ones.

    Parameters
    ----------
    spec : str
        A decoder built-in (:data:`DECODER_BUILTINS`) or ``hf:NAME`` of a GPT-2 or Llama config.
    batch : int
        Sequences processed together.
    tokens : int
        New tokens per sequence: the prompt length in a prefill, 1 in a decode step.
    kv_len : int
        Cached tokens per sequence (0: a prefill, no cache input; > 0: a decode step).
    dtype : str or torch.dtype
        Float dtype of parameters, activations and the cache.
    layers : int, optional
        For ``hf:`` models: build only this many layers (``None``: the config's). Built-ins are
        one layer.
    logits_to_keep : int, optional
        Positions the LM head computes logits at (0: every new token's); ``None``: the step's own
        rule (:func:`_logits_to_keep`: the last position of a prefill, every token of a step over a cache).

    Raises
    ------
    ModelSpecError
        Not a causal decoder, bad sizes, or more positions than a learned table (GPT-2) holds.

    Examples
    --------
    >>> step = build_step("llama3-8b-layer", batch=2, kv_len=16)
    >>> [tuple(a.shape) for a in step.spec.args]
    [(2, 1, 4096), (2, 8, 16, 128), (2, 8, 16, 128)]
    """
    check_positive(batch=batch, tokens=tokens, layers=layers)
    if isinstance(kv_len, bool) or not isinstance(kv_len, int) or kv_len < 0:
        raise ModelSpecError(f"kv_len must be a non-negative integer, got {kv_len!r}")
    check_tokens(batch, tokens + kv_len, seq_name="tokens + kv_len")
    torch_dtype = parse_dtype(dtype)
    keep = _logits_to_keep(kv_len) if logits_to_keep is None else logits_to_keep
    if spec.startswith(_HF_PREFIX) and load_config(spec[len(_HF_PREFIX) :])[0]["model_type"] in FAMILIES:
        return _family_step(spec, batch, tokens, kv_len, torch_dtype, layers, device, keep)
    if spec.startswith(_HF_PREFIX):
        model, full_layers, prefix, shape = _hf_model(spec[len(_HF_PREFIX) :], tokens + kv_len, layers, device)
        x = torch.zeros((batch, tokens), dtype=torch.int64, device=device)
    elif spec in DECODER_BUILTINS:
        preset = PRESETS[spec]
        with torch.device(device):
            model = preset.make(max(preset.default_seq, tokens + kv_len))  # rotary rows for every position
        full_layers, prefix, shape = 1, "", f"({batch}, {tokens}, hidden)"
        x = torch.zeros(preset.input_shape(batch, tokens), dtype=torch_dtype, device=device)
    else:
        raise ModelSpecError(f"phases need a causal decoder; {spec!r} is not one ({_DECODERS})")
    model = model.to(dtype=torch_dtype).eval()
    if prefix:  # a whole model with its LM head: a prefill samples from its last position only
        model.logits_to_keep = keep
    geometry = replace(kv_geometry(model, prefix), n_layers=full_layers)
    built = kv_geometry(model).n_layers
    caches = (
        [
            torch.zeros((batch, geometry.n_kv_heads, kv_len, geometry.head_dim), dtype=torch_dtype, device=device)
            for _ in range(2 * built)
        ]
        if kv_len
        else []
    )
    args: tuple = (x,) if not caches else ((x, *caches) if not prefix else (x, caches))
    what = f"decode step over {kv_len} cached tokens" if kv_len else f"prefill of {tokens} tokens"
    description = f"{spec}: {what}, batch {batch}, {built} of {full_layers} layer(s) built; input {shape}"
    return StepSpec(ModelSpec(spec, model, args, {}, description), geometry, built, tokens, kv_len)


def _logits_to_keep(kv_len: int) -> int:
    """Positions a step's LM head computes logits at (:func:`dfx.models.layers.logit_positions`; 0: all).

    A prefill (no cache) samples one token, after its last prompt position: 1, as transformers'
    ``generate`` (``logits_to_keep=1``), vLLM, SGLang and TensorRT-LLM run it. A step over a cache
    keeps every new token's logits: a decode step has one, and a speculative verify step of K + 1
    tokens needs them all (a chunk of a long prompt needs none but its last; it is counted whole).
    """
    return 1 if kv_len == 0 else 0


def _hf_model(name: str, positions: int, layers: int | None, device) -> tuple[nn.Module, int, str, str]:
    config, _ = load_config(name)
    kind = config["model_type"]
    if kind not in ("gpt2", "llama", *FAMILIES):
        raise ModelSpecError(f"phases need a causal decoder; hf:{name} is model_type {kind!r} ({_DECODERS})")
    _check_seq(config, positions)  # a learned position table (GPT-2) caps prompt + cache
    key = "n_layer" if kind == "gpt2" else "num_hidden_layers"
    full = int(config[key])
    if layers is not None:
        config = {**config, key: min(layers, full)}
    with torch.device(device):
        model = _DFX_BUILDERS[kind](config, positions)
    prefix = "h" if kind == "gpt2" else "layers"
    return model, full, prefix, f"input_ids ({positions} positions)"


def family_geometry(c: DecoderConfig) -> KVGeometry:
    """The :class:`KVGeometry` of a :class:`~dfx.models.decoder.DecoderConfig` (every layer of it)."""
    L = c.n_layers
    return KVGeometry(
        L,
        1 if c.mla else c.n_kv_heads,
        c.kv_lora_rank + c.qk_rope_head_dim if c.mla else c.head_dim,
        "layers",
        windows=tuple(c.window(i) for i in range(L)) if c.sliding_window else (),
        latent_dim=c.kv_lora_rank + c.qk_rope_head_dim if c.mla else 0,
        layer_kinds=tuple(c.layer_kind(i) for i in range(L)),
    )


def template_layers(kinds: tuple[object, ...]) -> tuple[int, ...]:
    """Layers to build so every later layer repeats one with a predecessor: layer 0, then each kind's first.

    >>> template_layers(("S", "S", "S", "S", "S", "F", "S"))  # Gemma 3: sliding, global every 6th
    (0, 1, 5)
    >>> template_layers(("D", "D", "D", "M", "M"))  # DeepSeek-V3: dense first layers, then MoE
    (0, 1, 3)
    """
    chosen = [0]
    seen: set[object] = set()
    for i, kind in enumerate(kinds[1:], start=1):
        if kind not in seen:
            seen.add(kind)
            chosen.append(i)
    return tuple(chosen)


def _family_step(spec, batch, tokens, kv_len, dtype, layers, device, logits_to_keep) -> StepSpec:
    """:func:`build_step` for the :mod:`dfx.models.decoder` families (Mistral ... DeepSeek-V3)."""
    config, _ = load_config(spec[len(_HF_PREFIX) :])
    full = decoder_config(config, tokens + kv_len)
    geometry = family_geometry(full)
    L = full.n_layers
    chosen = tuple(range(L)) if layers is None or layers >= L else template_layers(geometry.layer_kinds)
    built_cfg = replace(full, n_layers=len(chosen), layer_map=chosen)
    with torch.device(device):
        model = Decoder(built_cfg).to(dtype=dtype).eval()
    model.logits_to_keep = logits_to_keep
    check_expert_dtype(model, dtype)
    # model layer k repeats the built layer of its kind (layer 0 is itself)
    index = {geometry.layer_kinds[j]: b for b, j in enumerate(chosen) if b > 0}
    template = tuple(k if len(chosen) == L else (0 if k == 0 else index[geometry.layer_kinds[k]]) for k in range(L))
    x = torch.zeros((batch, tokens), dtype=torch.int64, device=device)
    caches: list[torch.Tensor] = []
    for j in chosen if kv_len else ():
        S = geometry.cached_tokens(j, kv_len)  # a sliding layer reads at most its window
        if full.mla:
            caches.append(torch.zeros((batch, S, geometry.latent_dim), dtype=dtype, device=device))
        else:
            shape = (batch, full.n_kv_heads, S, full.head_dim)
            caches += [torch.zeros(shape, dtype=dtype, device=device) for _ in range(2)]
    args: tuple = (x, caches) if kv_len else (x,)
    kwargs = {"start": kv_len} if kv_len else {}
    what = f"decode step over {kv_len} cached tokens" if kv_len else f"prefill of {tokens} tokens"
    description = (
        f"{spec}: {what}, batch {batch}, {len(chosen)} of {L} layer(s) built "
        f"(model layers {', '.join(map(str, chosen))}); input input_ids ({batch}, {tokens})"
    )
    return StepSpec(ModelSpec(spec, model, args, kwargs, description), geometry, len(chosen), tokens, kv_len, template)
