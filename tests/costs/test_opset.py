"""Torch's Core ATen opset against the cost rules (dfx.costs.opset), and the rules added for it."""

from __future__ import annotations

import json

import pytest

from dfx.capture.opset import core_aten_ops
from dfx.costs.opset import OPSET_NOTES, opset_coverage
from tests.costs._helpers import call, cost, spec


def test_every_core_aten_op_has_a_cost_rule_or_a_documented_reason():
    cov = opset_coverage(core_aten_ops())
    assert [o.op for o in cov.missing] == []
    # every bytes-only op is one of those the notes name (a note is never attached to nothing)
    assert {".".join(o.op.split(".")[:2]) for o in cov.noted} <= set(OPSET_NOTES)


def test_the_core_opset_is_the_core_tag_of_native_functions_yaml():
    # independent reference: torchgen's packaged native_functions.yaml, whose entries carry `tags: core`
    yaml = pytest.importorskip("yaml")
    import torchgen

    from pathlib import Path

    path = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    tagged = set()
    for entry in yaml.safe_load(path.read_text()):
        tags = entry.get("tags", [])
        if "core" in (tags if isinstance(tags, list) else [tags]):
            name = entry["func"].split("(")[0]
            packet, _, overload = name.partition(".")
            tagged.add(f"aten.{packet}.{overload or 'default'}")
    ops = set(core_aten_ops())
    assert tagged and tagged <= ops  # the yaml's core ops all listed (a few more get the tag in Python)
    assert len(ops) > 150


def test_a_missing_op_is_reported_missing():
    cov = opset_coverage(["aten.mm.default", "aten.not_an_op.default"])
    assert [o.op for o in cov.missing] == ["aten.not_an_op.default"]
    assert cov.to_dict()["missing"] == ["aten.not_an_op.default"]


def test_max_pool_backward_adds_each_gradient_at_its_argmax():
    # grad_output [2, 4, 4, 4] = 128 elements: 1 add each; reads g (512 B) + int64 indices (1,024 B);
    # writes grad_input [2, 4, 8, 8] fp32 = 2,048 B; self is read only for its shape
    g, x, idx = spec(2, 4, 4, 4), spec(2, 4, 8, 8), spec(2, 4, 4, 4, dtype="int64")
    c = call(
        "aten.max_pool2d_with_indices_backward.default",
        g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx,
        outputs=(spec(2, 4, 8, 8),),
    )  # fmt: skip
    r = cost(c)
    assert (r.cost.flops, r.cost.bytes_read, r.cost.bytes_written) == (128, 512 + 1024, 2048)


def test_avg_pool_backward_divides_then_adds_into_the_window():
    # grad_output [1, 2, 3, 3] = 18 elements, 3x3 kernel: 18 * (9 adds + 1 divide) = 180
    g, x = spec(1, 2, 3, 3), spec(1, 2, 9, 9)
    c = call(
        "aten.avg_pool2d_backward.default", g, x, [3, 3], [3, 3], [0, 0], False, True, None,
        outputs=(spec(1, 2, 9, 9),),
    )  # fmt: skip
    r = cost(c)
    assert (r.cost.flops, r.cost.bytes_read, r.cost.bytes_written) == (180, 18 * 4, 162 * 4)


def test_adaptive_avg_pool_backward_uses_pytorchs_windows():
    # in 5x5 -> out 3x3: windows [0,2) [1,4) [3,5) per dim: 2 + 3 + 2 = 7 per dim, 49 per channel;
    # N * C = 2: 98 adds + 18 divides = 116
    g, x = spec(1, 2, 3, 3), spec(1, 2, 5, 5)
    r = cost(call("aten._adaptive_avg_pool2d_backward.default", g, x, outputs=(spec(1, 2, 5, 5),)))
    assert r.cost.flops == 98 + 18


def test_group_norm_backward_is_layer_norms_per_element_count_over_groups():
    # x [2, 4, 8, 8], 2 groups: rows = 2 * 2 = 4 of 128; all three gradients, with a weight:
    # x_hat 2 + grad_input (8 + 1 weight) + grad_weight 2 + grad_bias 1 = 14 per element,
    # 14 * 512 + 4 rows = 7,172
    g, x = spec(2, 4, 8, 8), spec(2, 4, 8, 8)
    mean, rstd, w = spec(2, 2), spec(2, 2), spec(4)
    c = call(
        "aten.native_group_norm_backward.default", g, x, mean, rstd, w, 2, 4, 64, 2, [True, True, True],
        outputs=(spec(2, 4, 8, 8), spec(4), spec(4)),
    )  # fmt: skip
    r = cost(c)
    assert r.cost.flops == 7_172
    assert r.cost.bytes_read == 2048 + 2048 + 16 + 16 + 16


def test_the_new_rules_read_the_arguments_the_schemas_name():
    torch = pytest.importorskip("torch")
    aten = torch.ops.aten
    names = lambda op: [a.name for a in op._schema.arguments]  # noqa: E731
    assert names(aten.max_pool2d_with_indices_backward.default)[7] == "indices"
    assert names(aten.avg_pool2d_backward.default)[2] == "kernel_size"
    assert names(aten.native_group_norm_backward.default)[4:10] == ["weight", "N", "C", "HxW", "group", "output_mask"]


def test_dfx_ops_reports_the_coverage(capsys):
    from dfx.costs.command import ops

    ops(show_all=False, as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "dfx.opset_coverage/1"
    assert doc["missing"] == [] and doc["covered"] == doc["ops"] == len(core_aten_ops())
