"""The rule registry: validated registration, lookup with in-place/out= fallback, coverage of ops."""

import pytest

from dfx.costs import REGISTRY, Category, Cost, Registry, lookup_keys, rule_for

from ._helpers import call, cost, spec


def _rule(c):
    return Cost(1)


def test_register_accepts_a_list_and_a_single_string():
    reg = Registry()
    reg.register(["aten.neg", "aten.abs.default"], category=Category.ELEMENTWISE)(_rule)
    reg.register("aten.exp", category=Category.ELEMENTWISE)(_rule)
    assert set(reg.keys()) == {"aten.neg", "aten.abs.default", "aten.exp"}


@pytest.mark.parametrize("bad", [42, None, b"aten.mm", object()])
def test_register_rejects_a_non_string_key(bad):
    with pytest.raises(TypeError, match="strings"):
        Registry().register([bad], category=Category.MATMUL)


def test_register_rejects_an_op_object_not_its_name():
    import torch

    with pytest.raises(TypeError):
        Registry().register(torch.ops.aten.mm.default, category=Category.MATMUL)
    with pytest.raises(TypeError, match="'aten.mm'"):
        Registry().register([torch.ops.aten.mm], category=Category.MATMUL)


@pytest.mark.parametrize("bad", ["mm", "aten.", "aten.mm.default.extra", "aten mm", ""])
def test_register_rejects_a_malformed_key(bad):
    with pytest.raises(ValueError):
        Registry().register([bad], category=Category.MATMUL)


def test_register_rejects_duplicates_atomically():
    reg = Registry()
    reg.register(["aten.mm"], category=Category.MATMUL)(_rule)
    with pytest.raises(ValueError, match="aten.mm"):
        reg.register(["aten.bmm", "aten.mm"], category=Category.MATMUL)
    with pytest.raises(ValueError, match="aten.dot"):
        reg.register(["aten.dot", "aten.dot"], category=Category.MATMUL)
    assert reg.keys() == ("aten.mm",)  # nothing of the rejected lists was registered


def test_register_rejects_a_category_that_is_not_a_category():
    with pytest.raises(TypeError, match="Category"):
        Registry().register(["aten.mm"], category="matmul")
    with pytest.raises(ValueError, match="empty"):
        Registry().register([], category=Category.MATMUL)


def test_the_global_registry_rejects_a_second_mm_rule():
    with pytest.raises(ValueError, match="duplicate"):
        REGISTRY.register(["aten.mm"], category=Category.MATMUL)


def test_lookup_falls_back_from_in_place_and_out_variants():
    assert lookup_keys("aten.relu_.default")[-1] == "aten.relu"
    assert rule_for("aten.relu_.default") is rule_for("aten.relu.default")
    assert rule_for("aten.add_.Tensor").key == "aten.add"
    assert rule_for("aten.mm.out").key == "aten.mm"
    assert rule_for("aten.__and__.Tensor") is not None  # a dunder is not an in-place op
    assert "aten.__and_" not in lookup_keys("aten.__and__.Tensor")


def test_exact_overload_wins_over_its_packet():
    # aten.max.other is elementwise max(a, b); aten.max.dim a reduction over one dim
    assert rule_for("aten.max.other").key == "aten.max.other"
    assert rule_for("aten.max.dim").key == "aten.max"


def test_an_out_buffer_is_written_not_read():
    a, b, out = spec(4, 8), spec(8, 5), spec(4, 5)
    c = cost(call("aten.mm.out", a, b, outputs=(out,), out=out))
    assert c.cost == Cost(320, (32 + 40) * 4, 20 * 4)  # 2*4*8*5; reads a and b only


def test_a_rule_returning_something_else_is_a_type_error():
    reg = Registry()
    reg.register(["aten.neg"], category=Category.ELEMENTWISE)(lambda c: 3)
    with pytest.raises(TypeError, match="aten.neg"):
        reg.rule_for("aten.neg.default")(call("aten.neg.default"))


# Every op family the brief names, by one representative overload each.
REQUIRED = """
mm.default bmm.default addmm.default baddbmm.default addmv.default mv.default dot.default matmul.default
linear.default einsum.default convolution.default _convolution.default conv1d.default conv2d.default
conv3d.default conv_transpose2d.input scaled_dot_product_attention.default
_scaled_dot_product_flash_attention.default _scaled_dot_product_efficient_attention.default
_scaled_dot_product_cudnn_attention.default _scaled_dot_product_flash_attention_for_cpu.default
_flash_attention_forward.default _efficient_attention_forward.default _native_multi_head_attention.default
_transformer_encoder_layer_fwd.default embedding.default add.Tensor add.Scalar add_.Tensor sub.Tensor
mul.Tensor mul_.Scalar div.Tensor div_.Scalar neg.default exp.default tanh.default sigmoid.default
relu.default relu_.default gelu.default silu.default pow.Tensor_Scalar rsqrt.default where.self
clamp.default _softmax.default softmax.int _log_softmax.default _safe_softmax.default
native_layer_norm.default layer_norm.default rms_norm.default _fused_rms_norm.default batch_norm.default
_native_batch_norm_legit.default _native_batch_norm_legit_no_training.default native_batch_norm.default
group_norm.default native_group_norm.default sum.dim_IntList mean.dim amax.default max.dim var.correction
cat.default stack.default index.Tensor index_select.default gather.default scatter.src copy.default
copy_.default clone.default _to_copy.default contiguous.default expand.default view.default
_unsafe_view.default reshape.default transpose.int t.default permute.default unsqueeze.default
squeeze.dim slice.Tensor select.int alias.default as_strided.default split.Tensor chunk.default
detach.default lift_fresh.default empty.memory_format zeros.default ones.default full.default
arange.start scalar_tensor.default dropout.default native_dropout.default max_pool2d_with_indices.default
avg_pool2d.default _adaptive_avg_pool2d.default
"""


@pytest.mark.parametrize("op", REQUIRED.split())
def test_every_required_op_has_a_rule(op):
    assert rule_for(f"aten.{op}") is not None, op


def test_a_rule_registered_after_a_lookup_is_found():
    # rule_for remembers its answers; a registration must not leave a stale "no rule" (or a less
    # specific rule) behind
    reg = Registry()
    assert reg.rule_for("aten.neg_.default") is None
    reg.register("aten.neg", category=Category.ELEMENTWISE)(_rule)
    assert reg.rule_for("aten.neg_.default").key == "aten.neg"  # the in-place op's functional packet
    reg.register("aten.neg_.default", category=Category.ELEMENTWISE)(_rule)
    assert reg.rule_for("aten.neg_.default").key == "aten.neg_.default"  # the exact overload now


def test_a_plain_cost_and_a_one_category_mapping_give_the_same_call_cost():
    from dfx.costs import CallCost

    reg = Registry()
    reg.register("aten.mm", category=Category.MATMUL)(lambda c: Cost(10, 4, 6))
    reg.register("aten.bmm", category=Category.MATMUL)(lambda c: {Category.MATMUL: Cost(10, 4, 6)})
    reg.register("aten.t", category=Category.VIEW)(lambda c: Cost(0, 0, 0))
    mm, bmm = reg.rule_for("aten.mm.default"), reg.rule_for("aten.bmm.default")
    assert mm(call("aten.mm.default")) == CallCost(
        "aten.mm.default", Category.MATMUL, Cost(10, 4, 6), (("matmul", 10),)
    )
    assert bmm(call("aten.bmm.default")) == CallCost(
        "aten.bmm.default", Category.MATMUL, Cost(10, 4, 6), (("matmul", 10),)
    )
    # no FLOPs: no entry in the split
    assert reg.rule_for("aten.t.default")(call("aten.t.default")).flops_by_category == ()
