"""Views (0 bytes, 0 FLOPs: they only change metadata) and bookkeeping ops (category ``none``).

``reshape`` and ``contiguous`` are views when their input is already contiguous and copies
otherwise; the input spec's strides decide, and without strides they are taken as views.
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import io_cost
from dfx.ir import AtenCall, TensorSpec

__all__ = ["is_contiguous"]


@register_cost(
    [
        "aten.view",
        "aten._unsafe_view",
        "aten._reshape_alias",
        "aten.view_as",
        "aten.transpose",
        "aten.t",
        "aten.permute",
        "aten.unsqueeze",
        "aten.squeeze",
        "aten.slice",
        "aten.select",
        "aten.expand",
        "aten.expand_as",
        "aten.alias",
        "aten.as_strided",
        "aten.split",
        "aten.split_with_sizes",
        "aten.unsafe_split",
        "aten.unsafe_split_with_sizes",
        "aten.chunk",
        "aten.unsafe_chunk",
        "aten.tensor_split",
        "aten.unbind",
        "aten.detach",
        "aten.lift_fresh",
        "aten.lift",
        "aten.narrow",
        "aten.diagonal",
        "aten.unfold",
        "aten.movedim",
        "aten.moveaxis",
        "aten.flatten",
        "aten.unflatten",
        "aten.view_as_real",
        "aten.view_as_complex",
        "aten.real",
        "aten.imag",
        "aten.swapaxes",
        "aten.swapdims",
        "aten.numpy_T",
        "aten.mT",
        "aten.mH",
        "aten.adjoint",
        "aten.conj",
        "aten._conj",
        "aten._neg_view",
        "aten.positive",
        "aten.resolve_conj",
        "aten.resolve_neg",
        "aten.align_as",
        "aten.ravel",
        "aten.broadcast_to",
        "aten.atleast_1d",
        "aten.atleast_2d",
        "aten.atleast_3d",
        "aten.hsplit",
        "aten.vsplit",
        "aten.dsplit",
        "aten._indices",
        "aten._values",
    ],
    category=Category.VIEW,
)
def view(call: AtenCall) -> Cost:
    return Cost.zeros()


def is_contiguous(spec: TensorSpec) -> bool:
    """Whether ``spec``'s strides are row-major dense (size-1 dims may have any stride)."""
    if spec.stride is None:
        return True
    expected = 1
    for size, stride in reversed(list(zip(spec.shape, spec.stride))):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


@register_cost(["aten.reshape", "aten.contiguous"], category=Category.VIEW)
def reshape(call: AtenCall) -> Cost | dict[Category, Cost]:
    x = call.arg(0)
    if not isinstance(x, TensorSpec) or is_contiguous(x):
        return Cost.zeros()
    return {Category.MEMORY: io_cost(call)}  # a strided input is copied


@register_cost(
    [
        "aten.sym_size",
        "aten.sym_stride",
        "aten.sym_numel",
        "aten.sym_storage_offset",
        "aten.sym_is_contiguous",
        "aten.size",
        "aten.stride",
        "aten.numel",
        "aten.dim",
        "aten.is_contiguous",
        "aten.is_same_size",
        "aten.is_nonzero",
        "aten._assert_async",
        "aten._assert_scalar",
        "aten._assert_tensor_metadata",
        "aten.sym_constrain_range",
        "aten.sym_constrain_range_for_size",
        "aten._functional_assert_async",
        "aten._functional_assert_scalar",
        "aten._functional_sym_constrain_range",
        "aten._functional_sym_constrain_range_for_size",
        "aten._make_dep_token",
        "aten.record_stream",
        "aten._print",
        "aten.set_",
        "aten._has_compatible_shallow_copy_type",
        "aten._linalg_check_errors",  # raises if a linalg call's info tensor is nonzero
        "profiler._record_function_enter",
        "profiler._record_function_enter_new",
        "profiler._record_function_exit",
    ],
    category=Category.NONE,
)
def bookkeeping(call: AtenCall) -> Cost:
    return Cost.zeros()
