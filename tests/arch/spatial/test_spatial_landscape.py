"""The landscape table and map: six dimensions, every cell and position read from the profile files."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from dfx.arch.spatial.landscape import DIMENSIONS, MAP_FILES, TABLE_FILE, landscape, write_map
from dfx.errors import DfxError
from dfx.hardware import list_profiles, load_profile

SIX = [
    "memory_model",
    "scheduling_commitment",
    "unit_of_execution",
    "on_chip_memory_per_chip",
    "interconnect",
    "determinism",
]
# a GPU, a TPU, Groq, Cerebras, Spyre and a CPU
SPREAD = ["nvidia-h100-sxm", "google-tpu-v5e", "groq-lpu", "cerebras-wse-3", "ibm-spyre", "host-cpu"]


def _groq_data() -> dict:
    text = (resources.files("dfx.hardware") / "profiles" / "groq-lpu.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yaml.safe_load(text))


def _save(data: dict, tmp_path: Path) -> Path:
    path = tmp_path / "groq-edited.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_six_dimensions_for_every_kind_of_device():
    land = landscape(load_profile(i) for i in SPREAD)
    assert list(DIMENSIONS) == SIX
    assert {r.kind.value for r in land.rows} == {"gpu", "tpu", "tsp", "wafer", "spyre", "cpu"}  # Kind
    doc = land.to_dict()
    assert doc["dimensions"] == SIX and list(doc["rows"]) == SPREAD
    for cells in doc["rows"].values():
        assert list(cells) == SIX and all(v is not None for v in cells.values())


def test_cells_come_from_the_profile():
    rows = landscape(load_profile(i) for i in SPREAD).to_dict()["rows"]
    assert rows["groq-lpu"]["on_chip_memory_per_chip"] == 220 * 2**20  # memory.SRAM.capacity_bytes
    assert rows["groq-lpu"]["determinism"] == "cycle-exact"
    assert rows["groq-lpu"]["scheduling_commitment"] == "static"
    assert rows["nvidia-h100-sxm"]["memory_model"] == "cache"
    assert rows["cerebras-wse-3"]["scheduling_commitment"] == "mixed"
    assert rows["cerebras-wse-3"]["on_chip_memory_per_chip"] == 44e9


def test_every_shipped_profile_has_a_design_and_six_layers():
    for p in list_profiles():
        assert p.design is not None and p.design.layers is not None, p.id
        assert "synthesis" in p.source_of("design.layers.program_graph"), p.id


def test_editing_a_profile_file_changes_the_table_and_the_map(tmp_path):
    data = _groq_data()
    data["memory"][0]["capacity_bytes"] = "110 MiB"
    data["design"]["interconnect"] = "tin cans and string"
    data["design"]["memory_model_position"] = 0.5
    path = _save(data, tmp_path)
    row = landscape([load_profile(str(path))]).rows[0]
    assert row.on_chip_memory_per_chip == 110 * 2**20
    assert row.interconnect == "tin cans and string"
    assert row.x == 0.5 and row.y == 1.0
    write_map(landscape([load_profile(str(path))]), tmp_path / "map")
    assert json.loads((tmp_path / "map" / TABLE_FILE).read_text())["positions"]["groq-lpu"]["x"] == 0.5


def test_without_positions_the_enums_place_the_profile(tmp_path):
    data = _groq_data()
    del data["design"]["memory_model_position"], data["design"]["scheduling_position"]
    del data["sources"]["design.memory_model_position"], data["sources"]["design.scheduling_position"]
    data["scheduling"]["commitment"] = "mixed"
    row = landscape([load_profile(str(_save(data, tmp_path)))]).rows[0]
    assert (row.x, row.y) == (1.0, 0.5)  # scratchpad, mixed


def test_write_map_writes_png_svg_json_and_refuses_to_overwrite(tmp_path):
    land = landscape(load_profile(i) for i in SPREAD)
    written = write_map(land, tmp_path)
    assert sorted(p.name for p in written) == sorted([TABLE_FILE, *MAP_FILES])
    assert (tmp_path / "landscape.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "landscape.svg").read_bytes()[:2000]
    assert set(json.loads((tmp_path / TABLE_FILE).read_text())["positions"]) == set(SPREAD)
    before = (tmp_path / "landscape.png").read_bytes()
    with pytest.raises(DfxError, match="already exists?; pass --force"):
        write_map(land, tmp_path)
    assert (tmp_path / "landscape.png").read_bytes() == before
    write_map(land, tmp_path, force=True)


def test_an_empty_comparison_is_refused():
    with pytest.raises(DfxError, match="at least one"):
        landscape([])


def test_cli_compare_json_and_landscape(tmp_path):
    from dfx.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["hw", "compare", *SPREAD, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["dimensions"] == SIX and list(doc["rows"]) == SPREAD
    table = runner.invoke(app, ["hw", "compare", "groq", "h100"])
    assert table.exit_code == 0 and "cycle-exact" in table.stdout and "220.00 MiB" in table.stdout
    stacked = runner.invoke(app, ["hw", "compare", "groq", "--layers", "--json"])
    layers = json.loads(stacked.stdout)["layers"]["groq-lpu"]
    assert list(layers) == [
        "program_graph",
        "capture_specialization",
        "compiler_mapping_schedule",
        "memory_model",
        "interconnect",
        "compute_units",
    ]
    out = runner.invoke(app, ["hw", "landscape", "--out", str(tmp_path)])
    assert out.exit_code == 0 and (tmp_path / "landscape.svg").exists()
    again = runner.invoke(app, ["hw", "landscape", "--out", str(tmp_path)])
    assert isinstance(again.exception, DfxError)


def test_cli_groq_decoder():
    from dfx.cli import app

    result = CliRunner().invoke(app, ["groq", "--params", "70e9", "--hidden", "8192", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chips"] == 607
