"""Benchmark: compiling and evaluating a whole Llama-2-70B, against its capture in the same run.

Measured in one process (issue 14's goal: compile + evaluate adds at most 2 s beyond capture):

- capture: ``dfx.analysis.capture_spec("hf:llama-2-70b")`` (torch.export on fake tensors, 80 layers);
- costs: ``dfx.costs.annotate`` of that graph;
- eager: ``dfx.roofline.evaluate(..., execution_model="eager")``, the node-level roofline, as a peer;
- compile: ``dfx.compile.compile_program`` (fusion, tiling, placement, schedule) for each profile;
- evaluate: ``dfx.roofline.evaluate_program`` (kernel times on their cores, the list schedule).

Prints each time, compile + evaluate per profile, and its ratio to the capture and to the eager
evaluation. Usage: python bench/bench_compile.py [--model hf:llama-2-70b] [--seq 128]
[--hw nvidia-h100-sxm --hw ibm-spyre]. This is a benchmark, not a test: it prints, it asserts nothing.
"""

from __future__ import annotations

import argparse
import time

from dfx.analysis import capture_spec
from dfx.compile import compile_program
from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.roofline import evaluate, evaluate_program
from dfx.roofline.execution import default_execution_model
from dfx.roofline.latency import node_timing

_GOAL_S = 2.0  # issue 14: compile + evaluate at most 2 s beyond capture


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="hf:llama-2-70b")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--hw", action="append", default=None)
    args = ap.parse_args()
    profiles = [load_profile(h) for h in (args.hw or ["nvidia-h100-sxm", "ibm-spyre", "google-tpu-v5e"])]

    capture_s, (graph, _) = timed(lambda: capture_spec(args.model, seq=args.seq, dtype="bfloat16"))
    costs_s, costed = timed(lambda: annotate(graph))
    print(f"{args.model} seq {args.seq}: {len(graph.nodes):,} nodes; capture {capture_s:.2f} s, costs {costs_s:.2f} s")
    for profile in profiles:
        eager_s, _ = timed(lambda: evaluate(costed, profile, execution_model="eager"))
        compile_s, program = timed(lambda: compile_program(costed, profile))

        def program_eval():
            model = default_execution_model(profile)
            nodes = tuple(node_timing(n, costed.graph, profile, model) for n in costed.nodes)
            return evaluate_program(program, nodes, profile)

        eval_s, result = timed(program_eval)
        added = compile_s + eval_s
        verdict = "within" if added <= _GOAL_S else "OVER"
        print(f"  {profile.id}: {len(program.kernels):,} kernels; compile {compile_s:.2f} s + evaluate {eval_s:.2f} s "
              f"= {added:.2f} s ({verdict} the {_GOAL_S:.0f} s goal); {added / capture_s:.2f}x capture, "
              f"{added / eager_s:.1f}x the eager evaluation ({eager_s:.2f} s); makespan {result.makespan_s * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
