"""Hand-built export documents with numbers chosen so the expectations follow by hand."""

from __future__ import annotations

from typing import Any


def _node(
    name: str, op: str, module: str, inputs: list[str], flops: int, nbytes: int, shape: list[int]
) -> dict[str, Any]:
    return {
        "name": name,
        "op": op,
        "target": f"aten.{name.rstrip('_0123456789')}.default" if op == "call_function" else name,
        "module_path": module,
        "category": "matmul" if flops else "none",
        "flops": flops,
        "bytes_read": nbytes,
        "bytes_written": 0,
        "intensity": flops / nbytes if nbytes else 0.0,
        "dtype": "float32",
        "inputs": inputs,
        "outputs": [{"shape": shape, "dtype": "float32", "stride": []}] if op != "output" else [],
        "params": [],
        "aten_ops": [],
        "unknown_ops": [],
    }


def layered_doc(layers: int, *, odd_shape_in: int | None = None) -> dict[str, Any]:
    """``x -> layers.i.fc (linear) -> layers.i.act (relu)`` for i < ``layers``, then ``output``.

    Every linear is 100 FLOPs over 10 bytes, every relu 1 FLOP over 10 bytes; each node takes
    ``flops`` ns on a made-up profile ``toy`` (peak 1e9 FLOP/s, one level ``MEM`` of 1e9 B/s),
    so a linear is compute-bound (intensity 10 > ridge 1) and a relu memory-bound (0.1 < 1).
    Layer ``odd_shape_in`` (if given) has a different output shape, so it is not a repeat.
    """
    nodes = [_node("x", "placeholder", "", [], 0, 0, [4])]
    prev = "x"
    for i in range(layers):
        shape = [5] if i == odd_shape_in else [4]
        fc, act = f"linear_{i}", f"relu_{i}"
        nodes.append(_node(fc, "call_function", f"layers.{i}.fc", [prev], 100, 10, shape))
        nodes.append(_node(act, "call_function", f"layers.{i}.act", [fc], 1, 10, shape))
        prev = act
    nodes.append(_node("output", "output", "", [prev], 0, 0, []))
    edges = [{"src": n["inputs"][0], "dst": n["name"], "bytes": 16} for n in nodes if n["inputs"]]
    per = {}
    for n in nodes:
        work = bool(n["flops"])
        per[n["name"]] = {
            "bound": ("compute" if n["intensity"] >= 1 else "memory") if work else "none",
            "time_s": max(n["flops"], n["bytes_read"]) * 1e-9,
            "compute_time_s": n["flops"] * 1e-9,
            "memory_time_s": n["bytes_read"] * 1e-9,
            "overhead_s": 0.0,
            "flops": n["flops"],
            "bytes": n["bytes_read"],
            "intensity_flop_per_byte": n["intensity"],
            "dtype": "float32" if work else None,
            "peak_dtype": "float32" if work else None,
            "bytes_by_level": {"MEM": n["bytes_read"]},
            "bound_off_chip": None,
            "bound_on_chip": None,
        }
    path = [n["name"] for n in nodes]
    serial = sum(p["time_s"] for p in per.values())
    return {
        "schema": "dfx.analysis/1",
        "dfx_version": "test",
        "model": {"name": "layered"},
        "totals": {
            "flops": sum(n["flops"] for n in nodes),
            "bytes_read": 0,
            "bytes_written": 0,
            "intensity": 0.0,
            "flops_by_category": {},
            "matmul_macs": 0,
            "unique_parameter_count": 0,
            "unique_parameter_bytes": 0,
            "parameter_traffic_bytes": 0,
            "node_count": len(nodes),
        },
        "coverage": {"unknown_ops": [], "aten_calls": 0},
        "nodes": nodes,
        "edges": edges,
        "hardware": {
            "toy": {
                "execution_model": "eager",
                "off_chip_level": "MEM",
                "on_chip_level": None,
                "ridge_dtype": "float32",
                "ridge_flop_per_byte": {"MEM": 1.0},
                "nodes": per,
                "serial_time_s": serial,
                "critical_path": {"time_s": serial, "nodes": path},
                "partition_shift": [],
                "parallelism": {"work_s": serial, "span_s": serial, "parallelism": 1.0},
                "bound_counts": {},
                "arch_model": None,
                "dtype_fallbacks": {},
            }
        },
    }
