"""Benchmark: simulated nodes per second on a 100,000-node random DAG, against a networkx peer.

The DAG: node ``i`` has 1 to 3 producers drawn among the 1,000 nodes before it (a wide, deep
layered graph, about 200,000 edges), durations uniform in [1, 100] us, output sizes up to 1 MiB.
Seeded, so every run builds the same graph. Measured in one process, best of ``--repeat``:

- convert: ``dfx.sim.from_networkx`` (``DiGraph`` -> indexed DAG);
- simulate: ``dfx.sim.simulate(dag, pes=P)`` with both policies (rank, static plan and run,
  dynamic event simulation, concurrency and live-bytes views), one run, no jitter;
- peer: ``networkx.topological_sort`` of the same graph, one pass over every node and edge, as the
  yardstick for "a pass over the graph in Python".

Goal (issue 5): a simulation of 100,000 nodes in under 5 s.

Usage: python bench/bench_sim.py [--nodes 100000] [--pes 8] [--repeat 3] [--jitter 0.2 --runs 10]
This is a benchmark, not a test: it prints numbers, it asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import time

import networkx as nx

from dfx.sim import from_networkx, simulate

_WINDOW = 1000  # producers are drawn among the previous this-many nodes


def random_dag(nodes: int, seed: int = 1) -> nx.DiGraph:
    rng = random.Random(seed)
    g = nx.DiGraph()
    for i in range(nodes):
        g.add_node(f"n{i}", duration_s=rng.uniform(1e-6, 1e-4), output_bytes=rng.randint(1, 1 << 20))
    for i in range(1, nodes):
        for _ in range(rng.randint(1, 3)):
            g.add_edge(f"n{rng.randrange(max(0, i - _WINDOW), i)}", f"n{i}")
    return g


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--pes", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jitter", type=float, default=0.0)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()

    g = random_dag(args.nodes)
    print(f"random DAG: {g.number_of_nodes():,} nodes, {g.number_of_edges():,} edges, {args.pes} PEs")
    peer_s, _ = best_of(args.repeat, lambda: list(nx.topological_sort(g)))
    convert_s, dag = best_of(args.repeat, lambda: from_networkx(g))
    sim_s, r = best_of(args.repeat, lambda: simulate(dag, pes=args.pes, jitter_cv=args.jitter, runs=args.runs))
    n = len(dag)
    print(f"networkx topological_sort (peer) {peer_s:8.3f} s")
    print(f"from_networkx                    {convert_s:8.3f} s   {convert_s / peer_s:6.1f}x peer")
    print(f"simulate, both policies          {sim_s:8.3f} s   {sim_s / peer_s:6.1f}x peer")
    print(f"convert + simulate               {convert_s + sim_s:8.3f} s   (goal: < 5 s)")
    per_policy_runs = 2 * args.runs
    print(
        f"simulated nodes per second       {n * per_policy_runs / sim_s:12,.0f}  ({per_policy_runs} policy-runs of {n:,} nodes)"
    )
    lb = r.lower_bounds
    print(
        f"makespans: static {r.static.makespan.mean_s:.4f} s, dynamic {r.dynamic.makespan.mean_s:.4f} s; "
        f"bounds: critical path {lb.critical_path_s:.4f} s, work/P {lb.work_over_pes_s:.4f} s"
    )


if __name__ == "__main__":
    main()
