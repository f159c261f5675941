"""Whole models from a Hugging Face ``config.json``, built on the meta device: nothing is downloaded.

``hf:NAME`` is a config shipped in ``hf_configs/`` (``gpt2``, ``llama-2-7b``, ...) or a path to a
``config.json`` (or to a folder holding one). With ``transformers`` installed (the ``hf`` extra) the
model is ``AutoModelForCausalLM`` / ``AutoModel.from_config`` with SDPA attention; without it, dfx's
own GPT-2, Llama and BERT (``gpt2.py``, ``llama.py``, ``bert.py``) are built from the config fields.
The input is ``input_ids`` of shape (batch, seq), int64.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn as nn

from dfx.errors import ModelSpecError
from dfx.safe_load import load_json
from dfx.models.bert import Bert, BertConfig
from dfx.models.decoder import Decoder
from dfx.models.families import FAMILIES, decoder_config
from dfx.models.moe import check_expert_dtype
from dfx.models.gpt2 import GPT2, GPT2Config
from dfx.models.llama import Llama, LlamaConfig
from dfx.models.spec import ModelSpec, check_input_numel, check_positive, check_tokens, close_matches, parse_dtype

__all__ = ["CONFIG_DIR", "IMPLEMENTATIONS", "build_hf", "describe_config", "load_config", "shipped_configs"]

CONFIG_DIR = Path(__file__).parent / "hf_configs"
IMPLEMENTATIONS = ("auto", "transformers", "dfx")
_ALIASES = {"bert-base": "bert-base-uncased"}
_DEFAULT_SEQ = 128  # when a config names no context length
# Config fields that are sizes: each, when present and not null, must be a positive integer.
_SIZE_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "hidden_size",
    "n_embd",
    "num_attention_heads",
    "n_head",
    "num_key_value_heads",
    "intermediate_size",
    "n_inner",
    "vocab_size",
    "max_position_embeddings",
    "n_positions",
    "n_ctx",
    "head_dim",
    "type_vocab_size",
    "num_local_experts",
    "num_experts_per_tok",
    "num_experts",
    "n_routed_experts",
    "moe_intermediate_size",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "sliding_window",
)
_LAYER_FIELDS = ("num_hidden_layers", "n_layer")
# Capture traces every layer (about 0.6 s of CPU each for Llama-2-7B here), so a config of 100,000
# layers would run for hours; the deepest published decoders have about 126 (Llama 3.1 405B).
MAX_LAYERS = 512


def shipped_configs() -> list[str]:
    """Names of the configs that ship with dfx (``hf:NAME``)."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def describe_config(name: str) -> str:
    """One line about a shipped config: its architecture, layers, width and context length.

    Examples
    --------
    >>> describe_config("gpt2")
    'GPT2LMHeadModel (gpt2): 12 layers, hidden 768, 12 heads, context 1024; input input_ids (B, seq)'
    """
    config, _ = load_config(name)
    arch = (config.get("architectures") or [config["model_type"]])[0]
    layers = layer_count(config)
    hidden = config.get("hidden_size", config.get("n_embd"))
    heads = config.get("num_attention_heads", config.get("n_head"))
    context = config.get("max_position_embeddings", config.get("n_positions"))
    return (
        f"{arch} ({config['model_type']}): {layers} layers, hidden {hidden}, {heads} heads, context {context}"
        f"{_extras(config)}; input input_ids (B, seq)"
    )


def _extras(config: dict[str, Any]) -> str:
    """``, 8 experts top-2`` (MoE), ``, MLA latent 576`` (DeepSeek), ``, sliding window 4096``; or ``""``.

    >>> _extras({"n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "kv_lora_rank": 512,
    ...          "qk_rope_head_dim": 64})
    ', 256 experts top-8 + 1 shared, MLA latent 576'
    """
    out = ""
    experts = config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts")
    if experts:
        shared = config.get("n_shared_experts")
        out += f", {experts} experts top-{config.get('num_experts_per_tok')}" + (
            f" + {shared} shared" if shared else ""
        )
    if config.get("kv_lora_rank"):
        out += f", MLA latent {config['kv_lora_rank'] + config.get('qk_rope_head_dim', 0)}"
    if config.get("sliding_window") and config.get("use_sliding_window", True):
        out += f", sliding window {config['sliding_window']}"
    return out


def load_config(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The config dict and a label for it, from a shipped name or a ``config.json`` path."""
    name = _ALIASES.get(name_or_path, name_or_path)
    if name in shipped_configs():
        path = CONFIG_DIR / f"{name}.json"
    else:
        given = Path(name_or_path).expanduser()
        path = given / "config.json" if given.is_dir() else given
        if not path.is_file() and ("/" in name_or_path or name_or_path.endswith(".json")):
            where = f"no config.json in the folder {name_or_path!r}" if given.is_dir() else f"no file {name_or_path!r}"
            raise ModelSpecError(
                f"{where}; give the path of a Hugging Face config.json, or a shipped name "
                f"({', '.join(shipped_configs())})"
            )
        if not path.is_file():  # a name, neither shipped nor a path
            raise ModelSpecError(
                f"no Hugging Face config {name_or_path!r}{close_matches(name_or_path, shipped_configs())} "
                f"(shipped: {', '.join(shipped_configs())}; or give a path to a config.json)"
            )
    try:
        config = load_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelSpecError(f"cannot read {str(path)!r} as JSON ({' '.join(str(exc).split())})") from None
    if not isinstance(config, dict) or "model_type" not in config:
        raise ModelSpecError(f'{str(path)!r} is not a Hugging Face config: it has no "model_type"')
    label = name if path.parent == CONFIG_DIR else str(path)
    _check_sizes(config, label)  # every reader (build, capacity, decode) gets checked sizes
    return config, label


def build_hf(
    name_or_path: str,
    *,
    batch: int = 1,
    seq: int | None = None,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "meta",
    implementation: str = "auto",
) -> ModelSpec:
    """Build the whole model a Hugging Face config describes, with ``input_ids`` of shape (batch, seq).

    Parameters
    ----------
    name_or_path : str
        A shipped config name (see :func:`shipped_configs`) or a path to a ``config.json``.
    batch, seq : int
        ``seq=None`` is the config's context length (``n_positions`` / ``max_position_embeddings``).
    dtype, device
        As in :func:`dfx.models.build`.
    implementation : {"auto", "transformers", "dfx"}
        ``auto`` uses ``transformers`` when it is installed, else dfx's own GPT-2, Llama or BERT.

    Raises
    ------
    ModelSpecError
        Unknown config, a model type dfx cannot build without ``transformers``, a seq longer than
        the learned position table, or ``implementation="transformers"`` without it installed.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ModelSpecError(f"unknown implementation {implementation!r}; use one of {', '.join(IMPLEMENTATIONS)}")
    check_positive(batch=batch, seq=seq)
    torch_dtype = parse_dtype(dtype)
    config, label = load_config(name_or_path)
    seq = _check_seq(config, seq)
    check_tokens(batch, seq)
    check_input_numel("input_ids", (batch, seq))
    have_transformers = _have_transformers()
    if implementation == "transformers" and not have_transformers:
        raise ModelSpecError("implementation 'transformers' needs transformers: pip install 'dfx[hf]'")
    use_transformers = implementation == "transformers" or (implementation == "auto" and have_transformers)
    build = _from_transformers if use_transformers else _from_dfx
    model = build(config, seq, device).to(dtype=torch_dtype).eval()
    check_expert_dtype(model, torch_dtype)
    input_ids = torch.zeros((batch, seq), dtype=torch.int64, device=device)
    impl = "transformers" if use_transformers else "dfx"
    description = (
        f"{type(model).__name__} ({impl}) from Hugging Face config {label}: "
        f"{_layers(config)} layers; input_ids ({batch}, {seq}) int64"
    )
    return ModelSpec(f"hf:{name_or_path}", model, (input_ids,), {}, description)


def _check_sizes(config: dict[str, Any], label: str) -> None:
    """Refuse size fields that are not positive integers, and more layers than :data:`MAX_LAYERS`."""
    from dfx.errors import DfxError
    from dfx.limits import check_count, check_size

    try:
        for key in _SIZE_FIELDS:
            if config.get(key) is not None:
                check_size(f"{key} in config {label}", config[key], fix="fix the config.json")
        for key in _LAYER_FIELDS:
            if config.get(key) is not None:
                check_count(
                    f"{key} in config {label}",
                    config[key],
                    MAX_LAYERS,
                    unit="layers",
                    fix="analyse a config with fewer layers and scale per layer",
                )
    except DfxError as exc:
        raise ModelSpecError(str(exc)) from None


def layer_count(config: dict[str, Any]) -> int | None:
    """A config's decoder layers (``num_hidden_layers``, GPT-2's ``n_layer``); ``None`` when it names none.

    >>> layer_count({"num_hidden_layers": 32}), layer_count({"n_layer": 12}), layer_count({})
    (32, 12, None)
    """
    return config.get("num_hidden_layers", config.get("n_layer"))


def _have_transformers() -> bool:
    return importlib.util.find_spec("transformers") is not None


def _layers(config: dict[str, Any]) -> int | str:
    layers = layer_count(config)
    return "?" if layers is None else layers


def _max_positions(config: dict[str, Any]) -> int | None:
    return config.get("max_position_embeddings", config.get("n_positions"))


def _check_seq(config: dict[str, Any], seq: int | None) -> int:
    """Default seq is the config's context; learned position tables (GPT-2, BERT) cap it."""
    limit = _max_positions(config)
    if seq is None:
        return limit or _DEFAULT_SEQ
    learned = config["model_type"] in ("gpt2", "bert")
    if learned and limit is not None and seq > limit:
        raise ModelSpecError(
            f"seq {seq} exceeds the {limit} learned positions of {config['model_type']}: keep one pass at most "
            f"{limit} tokens (dfx analyze: --seq, --prompt-len, --kv-len; dfx serve: --max-batch-tokens, which "
            f"defaults to 2048, and --input-len + --output-len)"
        )
    return seq


# --- transformers -------------------------------------------------------------------------------


def _from_transformers(config: dict[str, Any], seq: int, device: str | torch.device) -> nn.Module:
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    # "_source" and other "_" keys are dfx's notes (the config's URL), not transformers fields
    fields = {k: v for k, v in config.items() if k not in ("model_type", "transformers_version") and k[:1] != "_"}
    if isinstance(fields.get("layer_types"), list) and isinstance(fields.get("num_hidden_layers"), int):
        fields["layer_types"] = fields["layer_types"][: fields["num_hidden_layers"]]  # a config cut to fewer layers
    try:
        hf_config = AutoConfig.for_model(config["model_type"], **fields)
    except (KeyError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise ModelSpecError(f"transformers cannot build model_type {config['model_type']!r}: {reason}") from None
    hf_config.use_cache = False  # a forward pass without a KV cache object in its outputs
    causal = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.get("architectures") or [])
    auto = AutoModelForCausalLM if causal else AutoModel
    with torch.device(device):  # imports done above, outside the device context
        try:
            return auto.from_config(hf_config, attn_implementation="sdpa")
        except ValueError:  # no SDPA path (Gemma 2's soft-capped logits): transformers' eager attention
            return auto.from_config(hf_config, attn_implementation="eager")


# --- dfx's own implementations ------------------------------------------------------------------


def _gpt2(c: dict[str, Any], seq: int) -> nn.Module:
    act = c.get("activation_function", "gelu_new")
    approximate = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu": "none"}.get(act)
    if approximate is None:
        raise ModelSpecError(f"dfx's GPT-2 has no activation {act!r}; install transformers: pip install 'dfx[hf]'")
    config = GPT2Config(
        n_embd=c["n_embd"],
        n_head=c["n_head"],
        n_layer=c["n_layer"],
        block_size=c.get("n_positions", 1024),
        vocab_size=c["vocab_size"],
        gelu_approximate=approximate,
        layer_norm_eps=c.get("layer_norm_epsilon", 1e-5),
        n_inner=c.get("n_inner"),
    )
    return GPT2(config, tie_word_embeddings=c.get("tie_word_embeddings", True))


def _llama(c: dict[str, Any], seq: int) -> nn.Module:
    if c.get("hidden_act", "silu") != "silu" or c.get("attention_bias") or c.get("mlp_bias"):
        raise ModelSpecError(
            "dfx's Llama covers SiLU without biases; for this config install transformers: pip install 'dfx[hf]'"
        )
    theta = c.get("rope_theta") or (c.get("rope_parameters") or {}).get("rope_theta", 10000.0)
    config = LlamaConfig(
        dim=c["hidden_size"],
        n_heads=c["num_attention_heads"],
        n_kv_heads=c.get("num_key_value_heads") or c["num_attention_heads"],
        hidden_dim=c["intermediate_size"],
        n_layers=c["num_hidden_layers"],
        vocab_size=c["vocab_size"],
        norm_eps=c.get("rms_norm_eps", 1e-6),
        rope_theta=float(theta),  # rope_scaling changes the frequencies' values only, not shapes or costs
        max_seq_len=max(seq, c.get("max_position_embeddings", 0)),  # rotary table rows
        head_dim=c.get("head_dim"),
    )
    return Llama(config, tie_word_embeddings=c.get("tie_word_embeddings", False))


def _bert(c: dict[str, Any], seq: int) -> nn.Module:
    if c.get("hidden_act", "gelu") != "gelu" or c.get("position_embedding_type", "absolute") != "absolute":
        raise ModelSpecError(
            "dfx's BERT covers GELU with absolute positions; install transformers: pip install 'dfx[hf]'"
        )
    config = BertConfig(
        hidden=c["hidden_size"],
        n_heads=c["num_attention_heads"],
        intermediate=c["intermediate_size"],
        n_layers=c["num_hidden_layers"],
        vocab_size=c["vocab_size"],
        max_positions=c.get("max_position_embeddings", 512),
        type_vocab_size=c.get("type_vocab_size", 2),
        layer_norm_eps=c.get("layer_norm_eps", 1e-12),
    )
    return Bert(config)


def _decoder(c: dict[str, Any], seq: int) -> nn.Module:
    """Mistral, Mixtral, Qwen2/3, Qwen3-MoE, Gemma 2/3, Phi-3, gpt-oss, DeepSeek-V3: :mod:`dfx.models.decoder`."""
    return Decoder(decoder_config(c, seq))


# model_type -> builder; everything else needs transformers.
_DFX_BUILDERS: dict[str, Callable[[dict[str, Any], int], nn.Module]] = {
    "gpt2": _gpt2,
    "llama": _llama,
    "bert": _bert,
    **{kind: _decoder for kind in FAMILIES},
}


def _from_dfx(config: dict[str, Any], seq: int, device: str | torch.device) -> nn.Module:
    builder = _DFX_BUILDERS.get(config["model_type"])
    if builder is None:
        raise ModelSpecError(
            f"model_type {config['model_type']!r} needs transformers (dfx builds {', '.join(_DFX_BUILDERS)} "
            "itself): pip install 'dfx[hf]'"
        )
    try:
        with torch.device(device):
            return builder(config, seq)
    except KeyError as exc:
        raise ModelSpecError(f"the {config['model_type']} config has no {exc.args[0]!r} field") from None
