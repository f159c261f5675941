"""Properties of the compiled execution model on every shipped model and profile (small sizes).

For each (model, profile):

- ``makespan_s >= total FLOPs / peak``: no schedule does more FLOPs per second than the machine's
  fastest peak (the largest ``peak_flop_per_s`` the profile lists, so it holds whatever dtype each
  kernel ran at);
- ``makespan_s >= compulsory off-chip bytes / off-chip bandwidth``: every weight crosses once, every
  graph input is read and every graph output written once (a table only gathered from, an
  embedding, needs only the rows gathered: its readers' outputs);
- ``critical_path.time_s <= makespan_s <= serial_time_s``;
- off-chip bytes: eager (every operator through off-chip memory) >= compiled >= compulsory.

The bounds are computed here from the graph and the profile file, independently of the program's
own timings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dfx.compile import compile_program
from dfx.hardware import load_profile

PROFILES = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "src/dfx/hardware/profiles").glob("*.yaml"))
# Every built-in model at a small size, and the smallest Hugging Face config dfx ships with a layer cap.
MODELS = {
    "gpt2-block": {"seq": 16}, "llama-layer": {"seq": 16}, "llama3-8b-layer": {"seq": 16},
    "bert-layer": {"seq": 16}, "vit-block": {}, "resnet-block": {"seq": 8}, "mlp": {},
    "hf:gpt2": {"seq": 16},
}
_REL = 1e-9  # float summation slack


@pytest.fixture(scope="module", params=sorted(MODELS))
def costed(request):
    pytest.importorskip("torch")
    from dfx.analysis import capture_spec
    from dfx.costs import annotate

    graph, _ = capture_spec(request.param, dtype="bfloat16", **MODELS[request.param])
    return annotate(graph)


def _weight_bytes(costed) -> int:
    """Each weight once; a weight read only by gathers (``memory`` nodes), the rows they gather."""
    readers: dict[str, list] = {}
    for cn in costed.nodes:
        for p in dict.fromkeys(cn.node.params):
            readers.setdefault(p, []).append(cn)
    total = 0
    for name, info in costed.graph.parameter_index.items():
        size, mine = info.spec.nbytes, readers.get(name, [])
        if mine and all(cn.category.value == "memory" for cn in mine):
            size = min(size, sum(s.nbytes for cn in mine for s in cn.node.outputs))
        total += size if mine else 0
    return total


def _compulsory_bytes(costed) -> int:
    """Weight bytes + graph input bytes + graph output bytes."""
    graph = costed.graph
    inputs = sum(s.nbytes for n in graph.nodes if n.op == "placeholder" and n.input_kind == "input" for s in n.outputs)
    by_name = {n.name: n for n in graph.nodes}
    outputs = 0
    for n in graph.nodes:
        if n.op == "output":
            for e in n.inputs:
                src = by_name[e.src]
                if src.input_kind not in ("parameter", "buffer", "constant") and e.index < len(src.outputs):
                    outputs += src.outputs[e.index].nbytes
    return _weight_bytes(costed) + inputs + outputs


def _compiled(costed, profile):
    """The compiled program on one chip, architecture model included (before any multi-chip split)."""
    from dfx.arch import arch_model_for
    from dfx.roofline import evaluate

    arch = arch_model_for(profile)
    timer = {} if arch is None else {"node_timer": arch.node_timer(costed, profile), "arch_model": arch.name}
    return evaluate(costed, profile, execution_model="compiled", **timer)


@pytest.mark.parametrize("profile_id", PROFILES)
def test_makespan_bounds_and_byte_order(costed, profile_id):
    profile = load_profile(profile_id)
    r = _compiled(costed, profile)
    makespan = r.makespan_s
    flops = costed.total.flops
    peak = max(profile.peak_flop_per_s.values())
    off = profile.off_chip_level()
    compulsory = _compulsory_bytes(costed)
    assert makespan >= flops / peak * (1 - _REL)
    if off is not None:
        assert makespan >= compulsory / off.bandwidth_bytes_per_s * (1 - _REL)
    assert r.critical_path.time_s <= makespan * (1 + _REL)
    assert makespan <= r.serial_time_s * (1 + _REL)
    eager = compile_program(costed, profile, passes=()).offchip_bytes
    compiled = r.program.program.offchip_bytes
    assert eager >= compiled >= compulsory, (eager, compiled, compulsory)
