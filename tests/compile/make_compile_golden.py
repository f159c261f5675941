"""Regenerate the compile regression guard: ``data/compile_golden.json`` (and its graph, with ``--graph``).

What it pins: the bench's compile + evaluate path (``bench/bench_compile.py``: ``compile_program``,
each node's ``node_timing``, ``evaluate_program``) on a tiny two-layer Llama (GQA, RMSNorm, SwiGLU;
``data/tiny_llama.graph.json``, a stored capture so that only compile and roofline changes move it)
on four profiles, one per compiler target: H100 (Inductor), Spyre and Groq (dataflow), TPU v5e (XLA).

This is a **regression guard, not a derived value**: the numbers are whatever the code computed when
the file was written, kept so that a change meant to be a pure speed-up can prove it moved no number
(bit for bit: floats are stored as ``repr`` round-trips, and a SHA-256 covers every kernel's record).
A change that is *meant* to move numbers regenerates it and says so in its commit message::

    PYTHONPATH=src .venv/bin/python tests/compile/make_compile_golden.py            # the snapshot
    PYTHONPATH=src .venv/bin/python tests/compile/make_compile_golden.py --graph    # recapture first (torch)

and reviews the diff. The values the compile tests derive by hand live in the other tests/compile files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data")
GRAPH = DATA / "tiny_llama.graph.json"
GOLDEN = DATA / "compile_golden.json"
PROFILES = ("nvidia-h100-sxm", "ibm-spyre", "google-tpu-v5e", "groq-lpu")

# llama-2-70b's config (src/dfx/models/hf_configs) cut to 2 layers of width 256: GQA 8 query heads on 2 KV heads
TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "vocab_size": 1000,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
SEQ = 64


def _digest(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def snapshot(graph: Any) -> dict[str, Any]:
    """Per profile: the summary numbers and a SHA-256 of the compiled program and of its evaluation."""
    from dfx.targets import compile_for
    from dfx.costs import annotate
    from dfx.hardware import load_profile
    from dfx.roofline import evaluate_program
    from dfx.roofline.execution import default_execution_model
    from dfx.roofline.latency import node_timing

    costed = annotate(graph)
    out: dict[str, Any] = {}
    for pid in PROFILES:
        profile = load_profile(pid)
        program = compile_for(costed, profile)
        model = default_execution_model(profile)
        nodes = tuple(node_timing(n, costed.graph, profile, model) for n in costed.nodes)
        result = evaluate_program(program, nodes, profile)
        out[pid] = {
            "makespan_s": result.makespan_s,
            "serial_time_s": result.serial_time_s,
            "critical_path_s": result.critical_path.time_s,
            "critical_path_kernels": list(result.critical_path.nodes),
            "kernels": len(result.kernels),
            "tiles": result.program.tile_count,
            "flops": result.program.flops,
            "offchip_bytes": result.program.offchip_bytes,
            "program_sha256": _digest(program.to_dict()),
            "result_sha256": _digest(result.to_dict()),
        }
    return out


def _capture_graph() -> None:
    import tempfile

    from dfx.analysis import capture_spec

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "tiny-llama.json"
        config.write_text(json.dumps(TINY_LLAMA))
        graph, _ = capture_spec(f"hf:{config}", seq=SEQ, dtype="bfloat16")
    GRAPH.write_text(graph.to_json() + "\n")
    print(f"wrote {GRAPH} ({len(graph.nodes)} nodes)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", action="store_true", help="recapture the tiny Llama first (needs torch)")
    args = ap.parse_args(argv)
    if args.graph:
        _capture_graph()
    from dfx.ir import Graph

    doc = {
        "generator": "tests/compile/make_compile_golden.py",
        "note": "a regression guard written by the code of its commit, not a derived value; see the generator",
        "graph": GRAPH.name,
        "profiles": snapshot(Graph.from_json(GRAPH.read_text())),
    }
    GOLDEN.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {GOLDEN} ({len(PROFILES)} profiles)")


if __name__ == "__main__":
    main(sys.argv[1:])
