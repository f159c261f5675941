"""Properties of every schedule on random DAGs (hypothesis).

- makespan >= max(critical path, work / N) (the classical lower bounds);
- the dynamic (greedy list) schedule <= work / N + (1 - 1/N) * critical path <= (2 - 1/N) * bound
  (Graham 1969);
- on one PE the makespan is the total work;
- no node starts before all its inputs finish, no PE runs two nodes at once, each node runs for its
  actual duration; with no jitter the static run is its compile-time plan.
"""

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfx.sim import Policy, simulate

_SETTINGS = settings(max_examples=60, deadline=None)
_TOL = 1e-9  # relative: float sums taken in different orders


@st.composite
def dags(draw, max_nodes=18):
    """A random DAG: edges only from lower to higher index, nodes given in a shuffled order."""
    n = draw(st.integers(1, max_nodes))
    # small integers make ties in rank and in time; floats make everything distinct
    duration = st.one_of(st.integers(0, 4).map(float), st.floats(0.0, 10.0, allow_nan=False, allow_infinity=False))
    durations = draw(st.lists(duration, min_size=n, max_size=n))
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1])
    edges = draw(st.sets(pair, max_size=3 * n)) if n > 1 else set()
    given_order = draw(st.permutations(range(n)))
    g = nx.DiGraph()
    for i in given_order:
        g.add_node(f"n{i}", duration_s=durations[i])
    g.add_edges_from((f"n{u}", f"n{v}") for u, v in edges)
    return g


def _close_le(a, b):
    return a <= b + _TOL * max(1.0, abs(b))


def _check_valid(result, durations):
    dag = result.dag
    for pr in result.policies:
        s = pr.schedule
        for v in range(len(dag)):
            assert s.end_s[v] - s.start_s[v] == _approx(durations[v])
            for u in dag.preds[v]:
                assert s.start_s[v] >= s.end_s[u], (pr.policy, dag.names[u], dag.names[v])
        for p in range(result.pes):
            spans = sorted((s.start_s[v], s.end_s[v]) for v in range(len(dag)) if s.pe[v] == p)
            for (_, e0), (s1, _) in zip(spans, spans[1:]):
                assert s1 >= e0


def _approx(x):
    return pytest.approx(x, rel=1e-12, abs=1e-12)


@_SETTINGS
@given(g=dags(), pes=st.integers(1, 5))
def test_bounds_hold(g, pes):
    r = simulate(g, pes=pes)
    lb = r.lower_bounds
    for pr in r.policies:
        assert _close_le(lb.bound_s, pr.makespan.mean_s)
    graham = lb.work_over_pes_s + (1 - 1 / pes) * lb.critical_path_s
    assert _close_le(r.dynamic.makespan.mean_s, graham)
    assert _close_le(graham, (2 - 1 / pes) * lb.bound_s)
    _check_valid(r, r.dag.duration_s)
    # no jitter: the static run is the compile-time plan
    assert r.static.makespan.mean_s == r.static.predicted_makespan_s


@_SETTINGS
@given(g=dags())
def test_one_pe_makespan_is_total_work(g):
    r = simulate(g, pes=1)
    for pr in r.policies:
        assert pr.makespan.mean_s == _approx(r.lower_bounds.work_s)
        assert pr.concurrency.peak <= 1


@_SETTINGS
@given(g=dags(), pes=st.integers(1, 4), cv=st.floats(0.05, 1.0), seed=st.integers(0, 2**16))
def test_jittered_runs_respect_dependences(g, pes, cv, seed):
    r = simulate(g, pes=pes, jitter_cv=cv, runs=1, seed=seed)
    # run 0's actual durations, read back from the static schedule (same draws for both)
    s = r.static.schedule
    actual = [e - b for b, e in zip(s.start_s, s.end_s)]
    _check_valid(r, actual)
    # and the bounds on the actual durations still hold for both policies
    work = sum(actual)
    for pr in r.policies:
        assert _close_le(work / pes, pr.makespan.mean_s)
    assert r.policy(Policy.DYNAMIC).schedule.policy is Policy.DYNAMIC
