"""Properties of the compiled execution model on every shipped model and profile (small sizes).

Checked on :func:`dfx.analyze` results (what a user reads: architecture models and the chip
placement included), for each (model, profile):

- ``makespan_s >= total FLOPs / peak``: no schedule does more FLOPs per second than the machine's
  fastest peak (the largest ``peak_flop_per_s`` the profile lists, so it holds whatever dtype each
  kernel ran at);
- ``makespan_s >= compulsory off-chip bytes / off-chip bandwidth``: every graph input is read and
  every graph output written once, and every weight crosses once (a table only gathered from, an
  embedding, needs only the rows gathered: its readers' outputs). The exception is a chip that keeps
  the weights on chip (``weight_load_s`` reported: Groq, a Cerebras wafer in layer-pipelined mode),
  quoted in the steady state of its architecture model: the weights are loaded once, in
  ``weight_load_s`` = weight bytes / off-chip bandwidth, and activations stay on chip, so no byte is
  compulsory per run there (``docs/compile.md``, "Weights resident on chip");
- ``critical_path.time_s <= makespan_s <= serial_time_s``;
- off-chip bytes: eager (every operator and weight through off-chip memory) >= compiled >= compulsory;
- eager makespan >= compiled makespan: the eager program (one kernel per operator) runs on the same
  kernel model as the compiled one, and fusion only removes launches and off-chip bytes. Groq and
  Cerebras refuse eager (their architecture models time operators whole, on chip:
  :func:`dfx.analysis.check_execution_model`); their eager bytes are the unfused program's.

The bounds are computed here from the graph and the profile file, independently of the program's
own timings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dfx.compile import compile_program
from dfx.targets import eager_program
from dfx.hardware import load_profile

PROFILES = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "src/dfx/hardware/profiles").glob("*.yaml"))
# Every built-in model at a small size, and the smallest Hugging Face config dfx ships with a layer cap.
MODELS = {
    "gpt2-block": {"seq": 16},
    "llama-layer": {"seq": 16},
    "llama3-8b-layer": {"seq": 16},
    "bert-layer": {"seq": 16},
    "vit-block": {},
    "resnet-block": {"seq": 8},
    "mlp": {},
    "hf:gpt2": {"seq": 16},
}
_REL = 1e-9  # float summation slack
# where eager means something: every shipped profile but those whose architecture model times operators whole
EAGER_PROFILES = [p for p in PROFILES if not p.startswith(("groq-", "cerebras-"))]


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


@pytest.fixture(scope="module")
def analyses(costed):
    """The compiled and the eager analysis of one model on every shipped profile, one chip each."""
    import dfx

    graph = costed.graph
    compiled = dfx.analyze(graph, hardware=PROFILES, chips=1).to_dict()["hardware"]
    eager = dfx.analyze(graph, hardware=EAGER_PROFILES, chips=1, execution_model="eager").to_dict()["hardware"]
    return compiled, eager


@pytest.mark.parametrize("profile_id", PROFILES)
def test_makespan_bounds_and_byte_order(costed, analyses, profile_id):
    profile = load_profile(profile_id)
    compiled, eager = analyses
    r, e = compiled[profile_id], eager.get(profile_id)
    makespan = r["makespan_s"]
    flops = costed.total.flops
    peak = max(profile.peak_flop_per_s.values())
    off = profile.off_chip_level()
    weights = _weight_bytes(costed)
    resident = "weight_load_s" in r
    compulsory = _compulsory_bytes(costed) - (weights if resident else 0)
    assert makespan >= flops / peak * (1 - _REL)
    if off is not None and not resident:
        assert makespan >= compulsory / off.bandwidth_bytes_per_s * (1 - _REL)
    if resident:  # loaded once: the unique weights over the off-chip level
        assert r["weight_load_s"] == pytest.approx(costed.unique_parameter_bytes() / off.bandwidth_bytes_per_s)
    assert r["critical_path"]["time_s"] <= makespan * (1 + _REL)
    assert makespan <= r["serial_time_s"] * (1 + _REL)
    eager_bytes = eager_program(costed, profile).offchip_bytes
    # the eager program moves every operator's traffic, and the intermediates of the operators the target
    # splits into kernels (Spyre: dfx.compile.decompose), which compiled code keeps on chip where they fit
    assert eager_bytes >= compile_program(costed, profile, passes=()).offchip_bytes
    if e is not None:
        assert e["program"]["offchip_bytes"] == eager_bytes
    assert eager_bytes >= r["program"]["offchip_bytes"] >= compulsory, (
        eager_bytes,
        r["program"]["offchip_bytes"],
        compulsory,
    )
    if e is not None:
        assert e["makespan_s"] >= makespan * (1 - _REL), (e["makespan_s"], makespan)


def test_resident_weights_only_on_chips_that_keep_them(analyses):
    # Groq has no DRAM; a small model fits a Cerebras wafer (layer-pipelined); nothing else keeps weights
    compiled, _ = analyses
    assert sorted(p for p, r in compiled.items() if "weight_load_s" in r) == [
        "cerebras-wse-2",
        "cerebras-wse-3",
        "groq-lpu",
    ]
