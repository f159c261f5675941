"""The Core ATen opset of the installed torch, listed from the ops' ``torch.Tag.core`` tag.

PyTorch tags each overload of its stable backend opset ``core`` in ``native_functions.yaml``
(https://docs.pytorch.org/docs/stable/torch.compiler_ir.html, "Core Aten IR"); the tag is visible
on every :class:`torch._ops.OpOverload` as ``op.tags``. :func:`dfx.costs.opset.opset_coverage`
says which cost rule covers each.
"""

from __future__ import annotations

__all__ = ["core_aten_ops", "torch_version"]


def core_aten_ops() -> tuple[str, ...]:
    """Full names (``"aten.add.Tensor"``) of every aten overload tagged ``torch.Tag.core``, sorted.

    Examples
    --------
    >>> ops = core_aten_ops()
    >>> "aten.mm.default" in ops and "aten.addmm.default" in ops
    True
    >>> "aten.linear.default" in ops  # a composite: decomposed to mm/addmm, not in the core set
    False
    """
    import torch

    names = set()
    # every op registered with the dispatcher ("aten::add.Tensor"); dir(torch.ops.aten) lists only
    # the packets already resolved in this process
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = qualified.partition("::")
        if namespace != "aten":
            continue
        packet_name, _, overload = rest.partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, packet_name), overload or "default")
        except (AttributeError, RuntimeError):  # a name the dispatcher lists but Python cannot resolve
            continue
        if torch.Tag.core in op.tags:
            names.add(f"aten.{packet_name}.{overload or 'default'}")
    return tuple(sorted(names))


def torch_version() -> str:
    """The installed torch's version string, which decides the opset."""
    import torch

    return str(torch.__version__)
