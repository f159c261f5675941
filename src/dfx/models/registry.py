"""The built-in models: a literal dict of presets, and :func:`build` to make one on any device.

Every preset is one layer or block of a published model, at its published dimensions (the source
is in the comment above each entry). ``seq`` is each model's own length axis: tokens for the
transformers, the image side for the ResNet block, images per sample for the MLP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

from dfx.errors import ModelSpecError
import dfx.models.bert as bert
import dfx.models.gpt2 as gpt2
import dfx.models.llama as llama
import dfx.models.mlp as mlp
import dfx.models.resnet as resnet
from dfx.models.spec import ModelSpec, check_input_numel, check_positive, check_tokens, parse_dtype

__all__ = ["PRESETS", "Preset", "available", "build", "describe"]


@dataclass(frozen=True)
class Preset:
    """How to build one built-in: its module (given seq), its input shape at (batch, seq), its default seq."""

    description: str
    make: Callable[[int], nn.Module]
    input_shape: Callable[[int, int], tuple[int, ...]]
    default_seq: int
    seq_means: str = "tokens"


PRESETS: dict[str, Preset] = {
    # GPT-2 small (124M), one block: Radford et al. 2019 and OpenAI's released `gpt2` config
    # (n_embd 768, n_head 12, n_positions 1024). The default model everywhere in dfx.
    "gpt2-block": Preset(
        description="GPT-2 small block: d=768, 12 heads, fused QKV, causal SDPA, GELU MLP 768->3072->768, biases",
        make=lambda _: gpt2.Block(gpt2.GPT2Config(n_embd=768, n_head=12)),
        input_shape=lambda b, t: (b, t, 768),  # hidden states (B, T, C)
        default_seq=1024,  # GPT-2's context length
    ),
    # Llama-2-7B, one decoder layer: Touvron et al. 2023 (Table 1) and `meta-llama/Llama-2-7b-hf`
    # config.json (hidden 4096, 32 heads, intermediate 11008, rms_norm_eps 1e-5, rope_theta 1e4).
    "llama-layer": Preset(
        description="Llama-2-7B layer: d=4096, 32 heads (MHA), SwiGLU 11008, RMSNorm, RoPE, no biases",
        make=lambda seq: llama.LlamaLayer(
            llama.LlamaConfig(
                dim=4096, n_heads=32, n_kv_heads=32, hidden_dim=11008, rope_theta=10000.0, max_seq_len=seq
            )  # rotary tables sized to seq
        ),
        input_shape=lambda b, t: (b, t, 4096),  # hidden states (B, T, C)
        default_seq=4096,  # Llama 2's training context (max_position_embeddings)
    ),
    # Llama-3-8B, one decoder layer: Meta's Llama 3 model card and `meta-llama/Meta-Llama-3-8B`
    # config.json (hidden 4096, 32 query / 8 KV heads, head dim 128, intermediate 14336, theta 5e5).
    "llama3-8b-layer": Preset(
        description="Llama-3-8B layer: d=4096, GQA 32 query / 8 KV heads of 128, SwiGLU 14336, RMSNorm, RoPE 500k",
        make=lambda seq: llama.LlamaLayer(
            llama.LlamaConfig(
                dim=4096, n_heads=32, n_kv_heads=8, hidden_dim=14336, rope_theta=500000.0, max_seq_len=seq
            )  # rotary tables sized to seq
        ),
        input_shape=lambda b, t: (b, t, 4096),  # hidden states (B, T, C)
        default_seq=8192,  # Llama 3's training context
    ),
    # bert-base, one encoder layer: Devlin et al. 2019 (L=12, H=768, A=12, FFN 4H) and
    # `bert-base-uncased` config.json (layer_norm_eps 1e-12, max_position_embeddings 512).
    "bert-layer": Preset(
        description="BERT-base layer: d=768, 12 heads, bidirectional, post-LN, GELU FFN 768->3072->768",
        make=lambda _: bert.BertLayer(bert.BertConfig(hidden=768, n_heads=12, intermediate=3072)),
        input_shape=lambda b, t: (b, t, 768),  # hidden states (B, T, C)
        default_seq=512,  # BERT's longest input
    ),
    # ViT-B/16, one encoder block: Dosovitskiy et al. 2021 (Table 1: ViT-Base, 768, 12 heads,
    # MLP 3072) at 224x224: (224/16)^2 = 196 patches + 1 class token = 197 tokens. It is the GPT-2
    # block without the causal mask, with exact GELU and timm's LayerNorm eps 1e-6.
    "vit-block": Preset(
        description="ViT-B/16 block: d=768, 12 heads, bidirectional, pre-LN, GELU MLP 768->3072->768",
        make=lambda _: gpt2.Block(
            gpt2.GPT2Config(n_embd=768, n_head=12, causal=False, gelu_approximate="none", layer_norm_eps=1e-6)
        ),
        input_shape=lambda b, t: (b, t, 768),  # patch tokens (B, T, C)
        default_seq=197,  # 14 x 14 patches of 16x16 pixels + [CLS]
    ),
    # ResNet-50 bottleneck, an identity block of stage conv2_x: He et al. 2016 (Table 1: [1x1 64,
    # 3x3 64, 1x1 256] at 56x56) and torchvision's `Bottleneck` (stride on the 3x3, BatchNorm).
    "resnet-block": Preset(
        description="ResNet-50 bottleneck (conv2_x): 256 -> 1x1 64 -> 3x3 64 -> 1x1 256, BatchNorm, ReLU, identity",
        make=lambda _: resnet.Bottleneck(resnet.BottleneckConfig(channels=256, mid_channels=64)),
        input_shape=lambda b, s: (b, 256, s, s),  # feature map (B, C, S, S)
        default_seq=56,  # 224 input / 4 (stride-2 stem conv and max pool)
        seq_means="image side",
    ),
    # The MLP of case PB-05 (fvcore issue #108): Flatten, 784 -> 512 -> 512 -> 10, ReLU.
    "mlp": Preset(
        description="MNIST MLP (case PB-05): 784 -> 512 -> 512 -> 10 with ReLU, biases",
        make=lambda _: mlp.MLP(mlp.MLPConfig(in_features=784, hidden=512, n_hidden_layers=2, out_features=10)),
        input_shape=lambda b, t: (b, t, 28, 28),  # images (B, T, 28, 28)
        default_seq=1,  # PB-05's input is (1, 1, 28, 28)
        seq_means="images per sample",
    ),
}


def available() -> list[str]:
    """The names of the built-in models, in registry order (the default, ``gpt2-block``, first).

    Examples
    --------
    >>> available()[0]
    'gpt2-block'
    """
    return list(PRESETS)


def describe(name: str) -> str:
    """One line about the built-in ``name``: what it is, its default input, what ``seq`` means.

    Examples
    --------
    >>> describe("mlp")
    'MNIST MLP (case PB-05): 784 -> 512 -> 512 -> 10 with ReLU, biases; input (B, 1, 28, 28), seq = images per sample'
    """
    preset = _preset(name)
    _, *rest = preset.input_shape(1, preset.default_seq)  # batch is always the first dim
    shape = ", ".join(["B", *(str(d) for d in rest)])
    return f"{preset.description}; input ({shape}), seq = {preset.seq_means}"


def _near_models(name: str) -> str:
    """``"; did you mean hf:llama-3-8b, llama3-8b-layer?"``: built-ins and shipped ``hf:`` configs close to ``name``."""
    import difflib

    from dfx.models.hf import shipped_configs

    choices = {c: c for c in available()} | {c: f"hf:{c}" for c in shipped_configs()}
    score = {shown: difflib.SequenceMatcher(None, name, c).ratio() for c, shown in choices.items()}
    near = sorted((s for s in score if score[s] >= 0.6), key=lambda s: -score[s])[:3]
    return f"; did you mean {', '.join(near)}?" if near else ""


def _preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ModelSpecError(
            f"unknown model {name!r}{_near_models(name)} (built-ins: {', '.join(available())};"
            " or give path/to/file.py:Class or hf:CONFIG)"
        )
    return PRESETS[name]


def build(
    name: str,
    *,
    batch: int = 1,
    seq: int | None = None,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "meta",
) -> ModelSpec:
    """Build the built-in model ``name`` with example inputs of shape ``input_shape(batch, seq)``.

    Parameters
    ----------
    name : str
        One of :func:`available`.
    batch, seq : int
        Batch size and length (tokens, image side or images; see each preset). ``seq=None`` is the
        model's default.
    dtype : str or torch.dtype
        A float dtype for parameters and inputs: ``float32``, ``bfloat16``, ``float16``, ``float64``.
    device : str or torch.device
        Where parameters and inputs live; ``meta`` (the default) allocates nothing.

    Returns
    -------
    ModelSpec
        The module in eval mode and its example inputs.

    Raises
    ------
    ModelSpecError
        For an unknown name (with close matches), a non-positive batch or seq, or a non-float dtype.

    Examples
    --------
    >>> spec = build("gpt2-block", batch=2, seq=128)
    >>> spec.args[0].shape, spec.args[0].device.type
    (torch.Size([2, 128, 768]), 'meta')
    """
    preset = _preset(name)
    check_positive(batch=batch, seq=seq)
    torch_dtype = parse_dtype(dtype)
    seq = preset.default_seq if seq is None else seq
    check_tokens(batch, seq)
    shape = preset.input_shape(batch, seq)
    check_input_numel(f"{name}'s input", shape)
    with torch.device(device):
        model = preset.make(seq)
    model = model.to(dtype=torch_dtype).eval()
    x = torch.randn(shape, dtype=torch_dtype, device=device)  # free on meta; real values elsewhere
    description = f"{preset.description}; input {tuple(shape)} {str(torch_dtype).removeprefix('torch.')}"
    return ModelSpec(name=name, model=model, args=(x,), kwargs={}, description=description)
