"""``dfx validate --compiled``: Inductor's kernel calls paired with dfx's kernels, the stamped wrapper, the document.

The pairing and the error summary are checked on hand-made names and seconds; one real compiled
run of the MLP checks the pairing Inductor's provenance gives and the document's shape (no timing
assertions: the machine is shared).
"""

import pytest

from dfx.measure.comparison import compare
from dfx.measure.compiled import kernel_sources, stamp_source
from dfx.measure.kernel_match import match_kernels


def test_one_kernel_for_one_kernel_pairs_in_call_order():
    units = match_kernels(
        {"k0": ["linear"], "k1": ["relu"]},
        [("addmm:1", ["linear"]), ("cpp_relu:2", ["relu"])],
        {"k0": "gemm", "k1": "pointwise"},
    )
    assert [(u.name, u.dfx_kernels, u.compiler_calls, u.category) for u in units] == [
        ("k0", ("k0",), ("addmm:1",), "matmul"),
        ("k1", ("k1",), ("cpp_relu:2",), "elementwise"),
    ]


def test_a_split_and_a_merge_make_one_unit_each():
    # dfx fuses add + norm into k1, Inductor runs them as two calls; Inductor fuses gelu + mul, dfx has two kernels
    dfx = {"k1": ["add", "norm"], "k2": ["gelu"], "k3": ["mul"]}
    calls = [("add:1", ["add"]), ("norm:2", ["norm"]), ("gelu_mul:3", ["gelu", "mul"])]
    units = match_kernels(dfx, calls)
    assert [(u.dfx_kernels, u.compiler_calls) for u in units] == [
        (("k1",), ("add:1", "norm:2")),
        (("k2", "k3"), ("gelu_mul:3",)),
    ]
    assert units[1].name == "k2+k3"


def test_a_recomputed_node_links_only_where_nothing_else_does():
    # Inductor inlines `add` into both of its users' kernels; dfx keeps it with `norm`
    dfx = {"k1": ["add", "norm"], "k2": ["add_1"]}
    calls = [("norm:1", ["add", "norm"]), ("add_1:2", ["add", "add_1"]), ("copy:3", ["add"])]
    units = match_kernels(dfx, calls)
    # norm:1 and add_1:2 link through their own nodes; copy:3 has only the recomputed node, so it links by it
    assert [(u.dfx_kernels, u.compiler_calls) for u in units] == [
        (("k1",), ("norm:1", "copy:3")),
        (("k2",), ("add_1:2",)),
    ]


def test_calls_and_kernels_without_a_partner_are_units_of_their_own():
    units = match_kernels({"k0": ["mm"], "k9": ["copy"]}, [("view_copy:1", []), ("mm:2", ["mm"])])
    assert [(u.name, u.dfx_kernels, u.compiler_calls) for u in units] == [
        ("view_copy:1", (), ("view_copy:1",)),  # nothing predicted
        ("k0", ("k0",), ("mm:2",)),
        ("k9", ("k9",), ()),  # nothing measured: last
    ]
    assert units[0].category == "none"


def test_error_summary_over_units_is_plain_arithmetic():
    units = match_kernels(
        {"k0": ["a"], "k1": ["b"], "k2": ["c"]}, [("x:1", ["a"]), ("y:2", ["b"]), ("z:3", ["c"]), ("w:4", [])]
    )
    predicted = {"k0": 2.0, "k1": 1.0, "k2": 3.0, "w:4": 0.0}
    measured = {"k0": 1.0, "k1": 2.0, "k2": 4.0, "w:4": 0.5}
    v = compare(predicted, measured, 8.0, units=units)
    # |2-1|/1 = 1.0, |1-2|/2 = 0.5, |3-4|/4 = 0.25 (w predicts 0 s: not counted) -> median 0.5
    assert v.median_abs_error == pytest.approx(0.5)
    # end to end: (2 + 1 + 3 + 0 - 8) / 8 = -0.25
    assert v.end_to_end.error == pytest.approx(-0.25)
    doc = v.to_dict()
    assert doc["execution"] == "compiled"
    assert [k["compiler_kernels"] for k in doc["kernels"]] == [["x:1"], ["y:2"], ["z:3"], ["w:4"]]
    assert doc["uncounted"] == {"nodes": 1, "measured_s": 0.5}


def test_an_eager_document_says_so_and_has_no_kernels():
    doc = compare({"a": 1.0}, {"a": 1.0}, 1.0).to_dict()
    assert doc["execution"] == "eager" and doc["kernels"] == []


def test_stamps_follow_every_kernel_call_and_open_the_call():
    src = "\n".join(
        [
            "def helper():",
            "    pass",
            "class Runner:",
            "    def call(self, args):",
            "        a, = args",
            "        # Topologically Sorted Source Nodes: [linear]",
            "        # [Provenance debug handles] extern_kernels.addmm:1",
            "        extern_kernels.addmm(a, b, c, out=d)",
            "        # [Provenance debug handles] torch.ops.aten._sdpa.default:2",
            "        buf5 = torch.ops.aten._sdpa.default(",
            "            q, (k, v))",
            "        buf6 = buf5[0]",
            "        return (buf6, )",
        ]
    )
    text, handles = stamp_source(src)
    assert handles == ("extern_kernels.addmm:1", "torch.ops.aten._sdpa.default:2")
    lines = text.splitlines()
    assert lines[4] == "        _dfx_stamp(0)"  # first statement of call
    assert lines[lines.index("        extern_kernels.addmm(a, b, c, out=d)") + 1] == "        _dfx_stamp(1)"
    assert lines[lines.index("            q, (k, v))") + 1] == "        _dfx_stamp(2)"  # after the whole statement
    assert len(lines) == len(src.splitlines()) + 3


def test_kernel_sources_follow_provenance_to_dfx_names():
    mapping = {
        "cppCodeToPost": {"extern_kernels.addmm:1": ["addmm"], "cpp_fused_relu_view_0:2": ["relu", "view_2"]},
        "postToPre": {"addmm": ["linear"], "relu": ["relu"], "view_2": ["linear"]},
    }
    got = kernel_sources(
        mapping, ["extern_kernels.addmm:1", "cpp_fused_relu_view_0:2", "unknown:3"], ["x", "linear", "relu"]
    )
    assert got == [
        ("extern_kernels.addmm:1", ("linear",)),
        ("cpp_fused_relu_view_0:2", ("linear", "relu")),
        ("unknown:3", ()),
    ]


@pytest.fixture(scope="module")
def mlp_compiled():
    from dfx.measure.validation import validate

    return validate("mlp", "host-cpu", repeat=2, warmup=1, compiled=True, prediction="cache-aware")


def test_mlp_compiled_pairs_inductor_kernels_with_dfx_kernels(mlp_compiled):
    # Inductor on the MLP: three addmm library calls, and one C++ relu kernel after each of the first two
    # (the relu of a [1, 512] row reads the addmm's output in place); dfx: the same five kernels
    units = mlp_compiled.units
    assert [u.compiler_calls for u in units] == [
        ("extern_kernels.addmm:1",),
        ("cpp_fused_relu_view_0:2",),
        ("extern_kernels.addmm:3",),
        ("cpp_fused_relu_view_0:4",),
        ("extern_kernels.addmm:5",),
    ]
    assert [u.category for u in units] == ["matmul", "elementwise", "matmul", "elementwise", "matmul"]
    assert [set(u.nodes) & {"linear", "relu", "linear_1", "relu_1", "linear_2"} for u in units][0::2] == [
        {"linear"},
        {"linear_1"},
        {"linear_2"},
    ]


def test_mlp_compiled_document_shape(mlp_compiled):
    doc = mlp_compiled.to_dict()
    assert doc["schema"] == "dfx.validation/1" and doc["execution"] == "compiled"
    assert doc["run"]["execution"] == "compiled"
    assert len(doc["nodes"]) == len(doc["kernels"]) == 5
    assert all(n["measured_s"] > 0 and n["predicted_s"] > 0 for n in doc["nodes"])
    assert {"name", "dfx_kernels", "compiler_kernels", "nodes", "category"} == set(doc["kernels"][0])
    # the end-to-end prediction is the sum of the units' predictions
    assert doc["end_to_end"]["predicted_s"] == pytest.approx(sum(n["predicted_s"] for n in doc["nodes"]))
    from dfx.measure.console import validation_text

    assert "per kernel: median |error|" in validation_text(doc)
