"""Model Explorer node data (dfx.viz.explorer): the overlays' values, and Model Explorer's own reading of them."""

from __future__ import annotations

import json
import operator

import pytest

from dfx.schema.analysis import example_analysis, example_hardware
from dfx.viz.explorer import explorer_files, explorer_names, node_data


def _doc():
    nodes = [
        {"name": "x", "op": "placeholder"},
        {"name": "mm", "inputs": ["x"], "category": "matmul", "flops": 2 * 4 * 8 * 16},  # [4,8] x [8,16]: 1,024
        {"name": "t", "inputs": ["mm"], "category": "view"},
        {"name": "relu", "inputs": ["t"], "category": "elementwise", "flops": 64},
        {"name": "output", "op": "output", "inputs": ["relu"]},
    ]
    hw = example_hardware(
        {
            "mm": {"bound": "compute", "time_s": 3e-6, "intensity_flop_per_byte": 1024 / 768},
            "t": {},
            "relu": {"bound": "memory", "time_s": 5e-7, "intensity_flop_per_byte": 0.25},
        }
    )
    return example_analysis("m", nodes, {"h": hw})


def test_values_are_the_documents_in_the_overlays_units():
    doc = _doc()
    # 3e-6 s = 3 us; 5e-7 s = 0.5 us
    assert node_data(doc, "latency", "h")["results"] == {"mm": {"value": 3.0}, "relu": {"value": 0.5}}
    assert node_data(doc, "intensity", "h")["results"] == {"mm": {"value": 1024 / 768}, "relu": {"value": 0.25}}
    assert node_data(doc, "flops")["results"] == {"mm": {"value": 1024}, "relu": {"value": 64}}
    bound = node_data(doc, "bound", "h")["results"]
    assert {k: v["value"] for k, v in bound.items()} == {"mm": "compute", "relu": "memory"}
    assert bound["mm"]["bgColor"] != bound["relu"]["bgColor"]


def test_views_placeholders_and_outputs_carry_no_value():
    results = node_data(_doc(), "latency", "h")["results"]
    assert not {"x", "t", "output"} & set(results)


def test_files_are_named_per_profile_and_metric():
    doc = _doc()
    names = ["explorer-h-latency.json", "explorer-h-bound.json", "explorer-h-intensity.json", "explorer-flops.json"]
    assert explorer_names(doc) == names
    files = explorer_files(doc)
    assert list(files) == names
    assert json.loads(files["explorer-h-latency.json"]) == node_data(doc, "latency", "h")


def test_bad_metric_or_profile_is_named():
    with pytest.raises(ValueError, match="'speed'"):
        node_data(_doc(), "speed", "h")
    with pytest.raises(ValueError, match="'a100'.*profiles: h"):
        node_data(_doc(), "latency", "a100")


@pytest.fixture(scope="module")
def gpt2_export():
    """gpt2-block's analysis on the H100, and the ExportedProgram Model Explorer would draw."""
    pytest.importorskip("torch")
    from dfx.analysis import analyze
    from dfx.capture.exported import export_program
    from dfx.models import resolve

    doc = analyze("gpt2-block", hardware=["h100"], method="export").to_dict()
    spec = resolve("gpt2-block", dtype="bfloat16")
    return doc, export_program(spec.model, spec.args, spec.kwargs)


def _is_view(fx_node) -> bool:
    """A node that moves no data, read off torch's own schema: it returns an alias of an input
    (``Tensor(a)``, not written to), or it picks one output of a tuple (``getitem``)."""
    if fx_node.target is operator.getitem:
        return True
    schema = getattr(fx_node.target, "_schema", None)
    if schema is None:
        return False
    alias = schema.returns[0].alias_info if schema.returns else None
    return alias is not None and not alias.is_write


def test_model_explorer_reads_every_overlay_and_finds_every_non_view_node(gpt2_export):
    pytest.importorskip("model_explorer")
    from model_explorer.consts import DEFAULT_SETTINGS
    from model_explorer.node_data_builder import GradientItem, GraphNodeData, NodeDataResult
    from model_explorer.pytorch_exported_program_adapter_impl import PytorchExportedProgramAdapterImpl

    doc, ep = gpt2_export
    graph = PytorchExportedProgramAdapterImpl(ep, DEFAULT_SETTINGS).convert()["graphs"][0]
    me_ids = {n.id for n in graph.nodes}
    fx_nodes = {n.name: n for n in ep.graph_module.graph.nodes}
    doing_work = {
        name for name, n in fx_nodes.items() if n.op == "call_function" and not _is_view(n)
    }  # gpt2-block: the norms, the four linears, attention, gelu, the adds
    assert {"layer_norm", "linear", "scaled_dot_product_attention", "gelu", "linear_3", "add_1"} <= doing_work
    for name, text in explorer_files(doc).items():
        raw = json.loads(text)
        # built with Model Explorer's classes, the overlay serialises back to the same JSON
        built = GraphNodeData(
            results={k: NodeDataResult(**v) for k, v in raw["results"].items()},
            name=raw["name"],
            gradient=[GradientItem(**g) for g in raw.get("gradient", [])],
        )
        again = json.loads(built.to_json_string())
        assert {k: again[k] for k in raw} == raw, name
        assert set(built.results) <= me_ids, name  # every key is a node Model Explorer draws
        # every node doing work, and nothing else: dfx's categories agree with torch's own aliasing
        assert set(built.results) == doing_work, (name, doing_work ^ set(built.results))


class _FakeExplorer:
    """Model Explorer's three calls ``dfx explore`` makes, recorded instead of starting a server."""

    def __init__(self):
        self.models, self.node_data, self.started = [], [], None

    def config(self):
        return self

    def add_model_from_pytorch(self, name, exported_program):
        self.models.append((name, exported_program))

    def add_node_data_from_path(self, path):
        self.node_data.append(path)

    def visualize_from_config(self, cfg, host, port, no_open_in_browser):
        self.started = (host, port, no_open_in_browser)


def test_explore_opens_the_exported_model_with_every_overlay(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    import dfx.viz.explore as explore
    from dfx.cli import app

    fake = _FakeExplorer()
    monkeypatch.setattr(explore, "_model_explorer", lambda: fake)
    out = tmp_path / "me"
    args = ["explore", "mlp", "--hw", "h100", "--out", str(out), "--no-browser", "--port", "8091"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ((name, ep),) = fake.models
    assert name == "mlp" and type(ep).__name__ == "ExportedProgram"
    written = sorted(p.name for p in out.iterdir())
    assert sorted(p.rsplit("/", 1)[-1] for p in fake.node_data) == written
    per_profile = {f"explorer-nvidia-h100-sxm-{m}.json" for m in ("bound", "intensity", "latency")}
    assert set(written) == per_profile | {"explorer-flops.json"}
    assert fake.started == ("localhost", 8091, True)


def test_explore_without_the_extra_names_it(monkeypatch):
    import builtins

    from typer.testing import CliRunner

    from dfx.cli import app

    real_import = builtins.__import__

    def no_model_explorer(name, *args, **kwargs):
        if name == "model_explorer" or name.startswith("model_explorer."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_model_explorer)
    result = CliRunner().invoke(app, ["explore", "mlp", "--hw", "h100"])
    assert result.exit_code != 0
    assert "dfx[explorer]" in str(result.exception) + result.output


def test_explore_refuses_a_bad_port_before_any_work(monkeypatch):
    from typer.testing import CliRunner

    import dfx.viz.explore as explore
    from dfx.cli import app

    monkeypatch.setattr(explore, "_model_explorer", lambda: pytest.fail("asked for Model Explorer"))
    result = CliRunner().invoke(app, ["explore", "mlp", "--port", "70000"])
    assert result.exit_code != 0 and "--port must be a TCP port from 1 to 65535, got 70000" in str(result.exception)


def test_explore_refuses_a_storage_dtype_before_any_work(tmp_path, monkeypatch):
    # `dfx explore gpt2-block --dtype fp8` analysed the model (analyze prices fp8), wrote the overlays,
    # then refused fp8 for the export; the refusal comes first now, and nothing is written
    from typer.testing import CliRunner

    import dfx.analysis
    import dfx.viz.explore as explore
    from dfx.cli import app

    monkeypatch.setattr(explore, "_model_explorer", lambda: pytest.fail("asked for Model Explorer"))
    monkeypatch.setattr(dfx.analysis, "analyze", lambda *a, **k: pytest.fail("analysed before the refusal"))
    out = tmp_path / "me"
    result = CliRunner().invoke(app, ["explore", "mlp", "--hw", "h100", "--dtype", "fp8", "--out", str(out)])
    assert result.exit_code != 0
    assert "dtype 'fp8' is not a model dtype" in str(result.exception)
    assert "--kv-dtype" not in str(result.exception)  # explore has no such option
    assert not out.exists()
