"""The persistent capture cache: a hit never exports, a changed definition misses, a bad entry is recaptured."""

import gzip
import json

import pytest

import dfx
from dfx.cache import CaptureCache, CaptureKey, definition_digest

# A GPT-2 of one layer, 64 wide: captured in about a second (hf: config path, dfx's own builder or transformers)
TINY_GPT2 = {
    "model_type": "gpt2",
    "n_layer": 1,
    "n_embd": 64,
    "n_head": 2,
    "n_positions": 32,
    "vocab_size": 128,
}


def _forbid_export(monkeypatch):
    import torch

    def refuse(*args, **kwargs):
        raise AssertionError("torch.export.export called on a cache hit")

    monkeypatch.setattr(torch.export, "export", refuse)


def _analysis_json(model, cache):
    return dfx.analyze(model, hardware=["nvidia-h100-sxm", "cerebras-wse-3"], seq=16, cache=cache).to_json()


def test_second_analyze_reads_the_cache_without_export(tmp_path, monkeypatch):
    cache = CaptureCache(tmp_path / "cache")
    first = _analysis_json("gpt2-block", cache)
    assert (cache.hits, cache.misses, cache.info().entries) == (0, 1, 1)
    _forbid_export(monkeypatch)
    second = _analysis_json("gpt2-block", cache)
    assert cache.hits == 1
    assert second == first  # the whole analysis document, byte for byte


def test_a_changed_config_file_misses(tmp_path, monkeypatch):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_GPT2))
    spec = f"hf:{config}"
    cache = CaptureCache(tmp_path / "cache")
    narrow = dfx.analyze(spec, hardware=[], seq=8, cache=cache)
    config.write_text(json.dumps({**TINY_GPT2, "n_embd": 128}))  # another model under the same path
    wide = dfx.analyze(spec, hardware=[], seq=8, cache=cache)
    assert (cache.hits, cache.misses) == (0, 2)
    # the LM head's matmul: 2 * tokens * width * vocab = 2 * 8 * {64, 128} * 128 FLOPs, twice as many
    assert wide.costed.total.flops > narrow.costed.total.flops
    _forbid_export(monkeypatch)
    again = dfx.analyze(spec, hardware=[], seq=8, cache=cache)
    assert cache.hits == 1 and again.costed.total == wide.costed.total


def test_the_key_names_what_the_capture_depends_on(tmp_path):
    base = CaptureKey.of("forward", "gpt2-block", batch=1, seq=16, dtype="float32", method="auto")
    for other in (
        CaptureKey.of("forward", "gpt2-block", batch=2, seq=16, dtype="float32", method="auto"),
        CaptureKey.of("forward", "gpt2-block", batch=1, seq=17, dtype="float32", method="auto"),
        CaptureKey.of("forward", "gpt2-block", batch=1, seq=16, dtype="bfloat16", method="auto"),
        CaptureKey.of("forward", "gpt2-block", batch=1, seq=16, dtype="float32", method="fx"),
        CaptureKey.of("forward", "gpt2-block", batch=1, seq=16, dtype="float32", method="auto", train=True),
        CaptureKey.of("forward", "bert-layer", batch=1, seq=16, dtype="float32", method="auto"),
    ):
        assert other.digest != base.digest
    text = str(base)
    assert "gpt2-block" in text and "batch=1 seq=16" in text and base.digest in text and base.torch in text


def test_a_user_file_is_keyed_by_its_content(tmp_path):
    path = tmp_path / "net.py"
    path.write_text("A = 1\n")
    first = definition_digest(f"{path}:Net")
    path.write_text("A = 2\n")
    assert definition_digest(f"{path}:Net") != first
    assert definition_digest(f"{tmp_path / 'absent.py'}:Net") is None  # not cached: resolve reports it
    assert definition_digest("hf:no-such-config") is None


def test_shipped_aliases_match_the_models_package():
    from dfx.cache.store import _HF_ALIASES
    from dfx.models.hf import _ALIASES

    assert _HF_ALIASES == _ALIASES


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # a torn write
        lambda raw: b"not gzip at all",
        lambda raw: gzip.compress(b'{"schema": "dfx.capture-cache/1", "key": {}, "graph": {}}'),  # another key
    ],
)
def test_an_unreadable_entry_warns_and_is_captured_again(tmp_path, damage):
    cache = CaptureCache(tmp_path)
    first = dfx.analyze("mlp", hardware=[], dtype="fp32", cache=cache)
    (entry,) = cache.folder.glob("*.json.gz")
    entry.write_bytes(damage(entry.read_bytes()))
    with pytest.warns(UserWarning, match="ignoring unreadable entry") as caught:
        again = dfx.analyze("mlp", hardware=[], dtype="fp32", cache=cache)
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    assert again.to_json() == first.to_json()
    key = CaptureKey.of("forward", "mlp", batch=None, seq=None, dtype="float32", method="auto")
    assert cache.get(key) is not None  # the recapture replaced the damaged entry


def test_writes_are_atomic_and_clear_empties(tmp_path):
    cache = CaptureCache(tmp_path)
    dfx.analyze("mlp", hardware=[], cache=cache)
    dfx.analyze("mlp", hardware=[], batch=2, cache=cache)
    names = sorted(p.name for p in cache.folder.iterdir())
    assert len(names) == 2 and not any(n.startswith(".tmp-") for n in names)  # no temporary file left
    assert cache.info().entries == 2 and cache.info().bytes > 0
    assert cache.clear() == 2 and cache.info().entries == 0


def test_the_default_folder_follows_the_environment(tmp_path, monkeypatch):
    from dfx.cache import default_cache_dir

    monkeypatch.delenv("DFX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "dfx"
    monkeypatch.setenv("DFX_CACHE_DIR", str(tmp_path / "mine"))
    assert CaptureCache().root == tmp_path / "mine"


def test_cache_commands(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dfx.cli import app

    monkeypatch.setenv("DFX_CACHE_DIR", str(tmp_path))
    runner = CliRunner()
    assert runner.invoke(app, ["analyze", "mlp", "--hw", "nvidia-h100-sxm", "--json"]).exit_code == 0
    info = json.loads(runner.invoke(app, ["cache", "info", "--json"]).stdout)
    assert info == {"root": str(tmp_path), "entries": 1, "bytes": info["bytes"]} and info["bytes"] > 0
    assert runner.invoke(app, ["analyze", "mlp", "--hw", "nvidia-h100-sxm", "--no-cache"]).exit_code == 0
    assert CaptureCache(tmp_path).info().entries == 1  # --no-cache wrote nothing
    cleared = runner.invoke(app, ["cache", "clear"])
    assert cleared.exit_code == 0 and "removed 1 captures" in cleared.stdout


def test_a_sweep_elsewhere_reads_the_captures_of_the_first(tmp_path, monkeypatch):
    from dfx.sweep import ResultsTable, load_spec, run_sweep
    from dfx.sweep.evaluate import costed_graph

    spec = load_spec(None, {"models": ["gpt2-block"], "hardware": ["nvidia-h100-sxm"], "seq": [8, 16], "batch": [2, 3]})
    cache = CaptureCache(tmp_path / "cache")
    run_sweep(spec, tmp_path / "first", workers=1, capture_cache=cache)
    assert cache.info().entries == 4  # one graph per (batch, seq), concrete or substituted
    costed_graph.cache_clear()  # this process's graphs: the second sweep must read the disk cache
    _forbid_export(monkeypatch)
    run_sweep(spec, tmp_path / "second", workers=1, capture_cache=cache)

    def rows(out):
        return {r["point_id"]: (r["latency_s"], r["flops"], r["bytes"]) for r in ResultsTable(out).rows()}

    assert rows(tmp_path / "second") == rows(tmp_path / "first")
    # and dfx analyze of one point reads the sweep's capture (no export), with the sweep's numbers
    hits = cache.hits
    a = dfx.analyze("gpt2-block", hardware=["nvidia-h100-sxm"], dtype="bf16", batch=2, seq=16, cache=cache)
    assert cache.hits == hits + 1
    (row,) = [r for r in ResultsTable(tmp_path / "first").rows() if (r["batch"], r["seq"]) == (2, 16)]
    assert (a.hardware[0].latency_s, a.costed.total.flops) == (row["latency_s"], row["flops"])
