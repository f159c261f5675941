"""Run SCALE-Sim (the ``scalesim`` package) on layers read from stdin; print its numbers as JSON.

This script runs *inside SCALE-Sim's own virtual environment* (scalesim 3.0.0 needs numpy 1.26), never
in dfx's: the tests, ``bench/bench_systolic.py`` and ``tests/arch/systolic/make_golden.py`` start it in
a subprocess. Input (stdin), a JSON list of cases::

    {"kind": "gemm", "m": 4, "k": 3, "n": 3, "rows": 4, "cols": 4, "dataflow": "ws"}
    {"kind": "conv", "ifmap_h": 1, "ifmap_w": 4, "filter_h": 1, "filter_w": 1, "channels": 4,
     "num_filters": 4, "stride": 1, "rows": 4, "cols": 4, "dataflow": "os"}

Output (stdout), one JSON object per case with SCALE-Sim's own report fields, untouched:
``compute_cycles_reported`` (its "Compute cycles": the index of the last cycle, stalls included),
``stall_cycles``, ``overall_util_pct``, ``mapping_eff_pct``, ``compute_util_pct``, the SRAM
read/write counts, the DRAM read/write counts and ``seconds`` (wall time of that case).

Traps handled here (issue 7): a GEMM row is ``name, M, N, K,`` (N before K, trailing comma);
SCALE-Sim is driven from Python with ``save_disk_space=True`` so it writes no per-cycle traces;
the run uses CALC (bandwidth-estimation) mode and SRAMs large enough that it reports no stalls.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import time

_CONFIG = """[general]
run_name = dfx

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {sram_kb}
FilterSramSzkB: {sram_kb}
OfmapSramSzkB: {sram_kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Dataflow: {dataflow}
Bandwidth: 10
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport: false
SparseRep: ellpack_block
OptimizedMapping: false
BlockSize: 8
RandomNumberGeneratorSeed: 40

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""

_LAYOUT = "Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, Channel Intraline Factor, IFMAP Height Intraline Order, IFMAP Width Intraline Order, Channel Intraline Order, IFMAP Height Interline Order, IFMAP Width Interline Order, Channel Interline Order, Num Filter Intraline Factor, Channel Intraline Factor, Num Filter Intraline Order, Channel Intraline Order, Num Filter Interline Order, Channel Interline Order,\nl0, 1, 1, 1, 0, 1, 2, 0, 1, 2, 1, 1, 0, 1, 0, 1,\n"


def _topology(case: dict) -> tuple[str, bool]:
    if case["kind"] == "gemm":  # name, M, N, K,  (N before K; the trailing comma matters)
        return f"Layer, M, N, K,\nl0, {case['m']}, {case['n']}, {case['k']},\n", True
    head = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
    row = ", ".join(
        str(case[f]) for f in ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "num_filters", "stride")
    )
    return head + f"l0, {row},\n", False


def run_case(case: dict) -> dict:
    from scalesim.scale_sim import scalesim

    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: os.path.join(tmp, name) for name in ("cfg.cfg", "topo.csv", "layout.csv")}
        topo, gemm = _topology(case)
        sram_kb = case.get("sram_kb", 100000)
        with open(paths["cfg.cfg"], "w") as fh:
            fh.write(_CONFIG.format(rows=case["rows"], cols=case["cols"], dataflow=case["dataflow"], sram_kb=sram_kb))
        with open(paths["topo.csv"], "w") as fh:
            fh.write(topo)
        with open(paths["layout.csv"], "w") as fh:
            fh.write(_LAYOUT)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            sim = scalesim(
                save_disk_space=True,
                verbose=False,
                config=paths["cfg.cfg"],
                topology=paths["topo.csv"],
                layout=paths["layout.csv"],
                input_type_gemm=gemm,
            )
            sim.run_scale(top_path=os.path.join(tmp, "out"))
            layer = sim.runner.single_layer_sim_object_list[0]
            overall, compute, stalls, util, mapping, cutil = layer.get_compute_report_items()
            detail = layer.get_detail_report_items()
        seconds = time.perf_counter() - start
    return {
        "case": case,
        "compute_cycles_reported": int(compute),
        "stall_cycles": int(stalls),
        "overall_util_pct": float(util),
        "mapping_eff_pct": float(mapping),
        "compute_util_pct": float(cutil),
        "ifmap_sram_reads": int(detail[2]),
        "filter_sram_reads": int(detail[5]),
        "ofmap_sram_writes": int(detail[8]),
        "ifmap_dram_reads": int(detail[11]),
        "filter_dram_reads": int(detail[14]),
        "ofmap_dram_writes": int(detail[17]),
        "seconds": seconds,
    }


if __name__ == "__main__":
    cases = json.load(sys.stdin)
    json.dump([run_case(c) for c in cases], sys.stdout)
