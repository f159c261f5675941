"""Data movement: copies, concatenation, padding, gathers, scatters, factories. ``memory``, 0 FLOPs.

Bytes follow what each op touches (docs/cost-model.md):

    copies (clone, _to_copy, cat, pad, flip, tril, repeat ...)   read every input, write the output
    copy_(self, src)          read src, write self; a copy never reads its destination
    gathers (embedding, index_select, gather, index.Tensor)
                              read only the gathered rows (output elements at the source's dtype)
                              plus the indices, write the output (PB-14)
    scatters (scatter, index_put, index_add ...), functional: read self, the indices and the source,
                              write the whole output; in place: read and write only what the source
                              covers. Accumulating scatters add one FLOP per source element.
    factories (zeros, ones, full, arange, rand, *_like, new_*)   write the output, read nothing
    empty, empty_like, empty_strided, new_empty                  allocate only: 0 bytes
"""

from __future__ import annotations

from dfx.costs.record import Category, Cost
from dfx.costs.registry import register_cost
from dfx.costs.terms import input_specs, io_cost, read_bytes, tensor_arg, write_bytes
from dfx.ir import AtenCall, TensorSpec

__all__ = ["gather_cost"]

MEM = Category.MEMORY


@register_cost(
    [
        "aten.clone",
        "aten._to_copy",
        "aten.lift_fresh_copy",
        "aten.cat",
        "aten.concat",
        "aten.concatenate",
        "aten.stack",
        "aten.hstack",
        "aten.vstack",
        "aten.repeat",
        "aten.repeat_interleave",
        "aten.tile",
        "aten.constant_pad_nd",
        "aten.pad",
        "aten.reflection_pad1d",
        "aten.reflection_pad2d",
        "aten.reflection_pad3d",
        "aten.replication_pad1d",
        "aten.replication_pad2d",
        "aten.replication_pad3d",
        "aten.flip",
        "aten.roll",
        "aten.rot90",
        "aten.tril",
        "aten.triu",
        "aten.masked_select",
        "aten.slice_scatter",
        "aten.select_scatter",
        "aten.diagonal_scatter",
        "aten.as_strided_scatter",
        # a view's gradient in a training graph: a zero tensor of the input's size with the incoming
        # gradient placed in it (read the gradient, write the whole input-sized result, no FLOPs)
        "aten.select_backward",
        "aten.slice_backward",
        "aten.diagonal_backward",
        "aten.expand_copy",
        "aten.permute_copy",
        "aten.view_copy",
        "aten.transpose_copy",
        "aten.t_copy",
        "aten.unsqueeze_copy",
        "aten.squeeze_copy",
        "aten.slice_copy",
        "aten.select_copy",
        "aten.alias_copy",
        "aten.detach_copy",
        "aten.unfold_copy",
        "aten.split_copy",
        "aten.split_with_sizes_copy",
        "aten.unbind_copy",
        "aten.diagonal_copy",
        "aten.as_strided_copy",
        "aten._unsafe_view_copy",
        "aten.nonzero",
        "aten.index_fill",
        "aten.masked_scatter",
        "aten.col2im",
        "aten.im2col",
        "aten.pixel_shuffle",
        "aten.pixel_unshuffle",
        "aten.channel_shuffle",
        "aten.native_channel_shuffle",
    ],
    category=MEM,
)
def copy_like(call: AtenCall) -> Cost:
    return io_cost(call)


@register_cost(["aten.copy", "aten._copy_from", "aten._copy_from_and_resize"], category=MEM)
def copy(call: AtenCall) -> Cost:
    # copy(self, src) / copy_(self, src): read src, write self's shape at self's dtype
    src = tensor_arg(call, 1, "src")
    return io_cost(call, reads=[src] if src is not None else [])


def gather_cost(call: AtenCall, source: TensorSpec, indices: list[TensorSpec]) -> Cost:
    """Read the gathered elements of ``source`` and the ``indices``; write the output."""
    gathered = sum(o.numel for o in call.outputs[:1]) * source.itemsize
    return Cost(0, gathered + sum(read_bytes(i) for i in indices), sum(write_bytes(o) for o in call.outputs))


def _source(call: AtenCall, index: int, name: str) -> TensorSpec:
    spec = tensor_arg(call, index, name)
    if spec is None:
        raise ValueError(f"{call.op}: argument {index} ({name}) is not a tensor")
    return spec


@register_cost(["aten.embedding"], category=MEM)
def embedding(call: AtenCall) -> Cost:
    # weight[V, D], indices[..] -> [.., D]: reads numel(indices) rows of D, not the table (PB-14)
    return gather_cost(call, _source(call, 0, "weight"), [_source(call, 1, "indices")])


@register_cost(["aten.index_select", "aten.gather", "aten.take", "aten.take_along_dim"], category=MEM)
def index_select(call: AtenCall) -> Cost:
    # (self, dim, index) / gather(self, dim, index) / take(self, index): output-sized reads of self
    return gather_cost(call, _source(call, 0, "self"), list(input_specs(call)[1:]))


@register_cost(["aten.index.Tensor", "aten.index.Tensor_hacked_twin", "aten._unsafe_index"], category=MEM)
def index(call: AtenCall) -> Cost:
    # self[indices]: the indices are a list with None for sliced dims
    return gather_cost(call, _source(call, 0, "self"), list(input_specs(call)[1:]))


@register_cost(["aten.embedding_bag", "aten._embedding_bag", "aten._embedding_bag_forward_only"], category=MEM)
def embedding_bag(call: AtenCall) -> dict[Category, Cost]:
    # (weight[V, D], indices[I], offsets[bags], scale_grad, mode, sparse, per_sample_weights, ...)
    weight, indices = _source(call, 0, "weight"), _source(call, 1, "indices")
    rows = indices.numel * weight.shape[-1]  # gathered elements, I * D
    reads = rows * weight.itemsize + sum(read_bytes(s) for s in input_specs(call)[1:])
    mode = call.arg(4, "mode", 0)  # 0 sum, 1 mean, 2 max
    per_sample = tensor_arg(call, 6, "per_sample_weights") is not None
    bags_out = call.outputs[0].numel if call.outputs else 0
    flops = rows + per_sample * rows + (mode == 1) * bags_out  # add or compare, weight mul, mean divide
    writes = sum(write_bytes(o) for o in call.outputs)
    return {MEM: Cost(0, reads, writes), Category.ELEMENTWISE: Cost(flops)}


def _scatter(call: AtenCall, src_index: int, src_name: str, accumulate: bool) -> Cost | dict[Category, Cost]:
    self_ = _source(call, 0, "self")
    src = tensor_arg(call, src_index, src_name)
    others = list(input_specs(call)[1:])  # index(es) and source
    touched = src.numel if src is not None else min(s.numel for s in others) if others else self_.numel
    flops = touched if accumulate else 0
    if call.packet.endswith("_"):  # in place: only the covered part of self is read and written
        touched_bytes = touched * self_.itemsize
        cost = Cost(0, sum(read_bytes(s) for s in others) + touched_bytes * accumulate, touched_bytes)
    else:
        cost = io_cost(call)
    return {MEM: cost, Category.ELEMENTWISE: Cost(flops)} if flops else cost


@register_cost(["aten.scatter", "aten.index_copy"], category=MEM)
def scatter(call: AtenCall) -> Cost | dict[Category, Cost]:
    # scatter(self, dim, index, src | value) / index_copy(self, dim, index, source)
    return _scatter(call, 3, "src", accumulate=False)


@register_cost(["aten.scatter_add", "aten.scatter_reduce", "aten.index_add", "aten.index_reduce"], category=MEM)
def scatter_add(call: AtenCall) -> Cost | dict[Category, Cost]:
    return _scatter(call, 3, "src", accumulate=True)


@register_cost(["aten.index_put", "aten._index_put_impl"], category=MEM)
def index_put(call: AtenCall) -> Cost | dict[Category, Cost]:
    # index_put(self, indices, values, accumulate)
    return _scatter(call, 2, "values", accumulate=bool(call.arg(3, "accumulate", False)))


@register_cost(
    [
        "aten.zeros",
        "aten.ones",
        "aten.full",
        "aten.scalar_tensor",
        "aten.arange",
        "aten.linspace",
        "aten.logspace",
        "aten.eye",
        "aten.tensor",
        "aten.zeros_like",
        "aten.ones_like",
        "aten.full_like",
        "aten.new_zeros",
        "aten.new_ones",
        "aten.new_full",
        "aten.fill",
        "aten.zero",
        "aten.rand",
        "aten.randn",
        "aten.randint",
        "aten.randperm",
        "aten.rand_like",
        "aten.randn_like",
        "aten.randint_like",
        "aten.uniform",
        "aten.normal",
        "aten.bernoulli",
        "aten.exponential",
        "aten.random",
        "aten.geometric",
        "aten.log_normal",
        "aten.cauchy",
        "aten.multinomial",
        "aten.tril_indices",
        "aten.triu_indices",
        "aten._shape_as_tensor",
    ],
    category=MEM,
)
def factory(call: AtenCall) -> Cost:
    # writes its output; reads only the tensors it takes values from: probabilities or means of
    # bernoulli/normal/multinomial, the value of fill_(self, value); never the tensor it fills or
    # takes its shape from (zeros_like(x), new_zeros(x, ...), x.uniform_())
    specs = input_specs(call)
    in_place = call.packet.endswith("_")
    if call.packet.split(".")[1].rstrip("_") in _TAKES_VALUES:
        return io_cost(call, reads=specs[1:] if in_place else specs)
    return io_cost(call, reads=specs[1:] if in_place or call.packet == "aten.fill" else [])


# factories whose tensor arguments are values to read (probabilities, means and stds)
_TAKES_VALUES = {"bernoulli", "normal", "multinomial"}


@register_cost(
    [
        "aten.empty",
        "aten.empty_like",
        "aten.empty_strided",
        "aten.new_empty",
        "aten.new_empty_strided",
        "aten.empty_permuted",
        "aten.resize",
        "aten.resize_as",
    ],
    category=MEM,
)
def empty(call: AtenCall) -> Cost:
    return Cost.zeros()  # allocation only: nothing is read or written


@register_cost(["aten._local_scalar_dense"], category=MEM)
def item(call: AtenCall) -> Cost:
    x = _source(call, 0, "self")
    return Cost(0, x.itemsize, 0)  # .item(): one element to the host
