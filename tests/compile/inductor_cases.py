"""The six models of the Inductor check, at small widths (same classes and graphs as the presets)."""

import torch

from dfx.models import bert, gpt2, llama, resnet

SEQ = 32


def small_models() -> dict[str, tuple[torch.nn.Module, tuple]]:
    """name -> (module in eval mode, example inputs): the preset's class with reduced widths."""
    torch.manual_seed(0)
    x = lambda d: torch.randn(1, SEQ, d)  # noqa: E731 - hidden states (B, T, C)
    llama2 = llama.LlamaConfig(dim=128, n_heads=4, n_kv_heads=4, hidden_dim=352, max_seq_len=SEQ)
    llama3 = llama.LlamaConfig(dim=128, n_heads=4, n_kv_heads=2, hidden_dim=448, rope_theta=500000.0, max_seq_len=SEQ)
    vit = gpt2.GPT2Config(n_embd=128, n_head=4, causal=False, gelu_approximate="none", layer_norm_eps=1e-6)
    cases = {
        "gpt2-block": (gpt2.Block(gpt2.GPT2Config(n_embd=128, n_head=4)), (x(128),)),
        "llama-layer": (llama.LlamaLayer(llama2), (x(128),)),
        "llama3-8b-layer": (llama.LlamaLayer(llama3), (x(128),)),
        "bert-layer": (bert.BertLayer(bert.BertConfig(hidden=128, n_heads=4, intermediate=512)), (x(128),)),
        "vit-block": (gpt2.Block(vit), (x(128),)),
        "resnet-block": (
            resnet.Bottleneck(resnet.BottleneckConfig(channels=64, mid_channels=16)),
            (torch.randn(1, 64, 8, 8),),
        ),
    }
    return {name: (m.eval(), args) for name, (m, args) in cases.items()}
