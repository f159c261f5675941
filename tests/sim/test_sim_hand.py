"""Hand-computed schedules: chain, diamond and fork-join on 1, 2 and 4 PEs under both policies.

Notation in the comments: ``x[s, e]@p`` is node x running from s to e seconds on PE p. Priority is
the upward rank (longest path to the exit, own duration included); equal ranks keep the order the
nodes were given. Dynamic: the highest-priority ready node goes to the lowest-numbered free PE.
Static: in priority order, each node goes to the PE that finishes it earliest on predicted times
(ties: the PE free latest, then the lowest number), and each PE keeps that order at run time.
"""

import pytest

from dfx.sim import (
    Policy,
    SimulationError,
    dag_from_lists,
    from_networkx,
    lower_bounds,
    plan_static,
    priority_order,
    run_dynamic,
    run_static,
    simulate,
    upward_rank,
)
from dfx.sim.result import percentile

# a(1) -> b(2) -> c(3)
CHAIN = ({"a": 1.0, "b": 2.0, "c": 3.0}, [("a", "b"), ("b", "c")])
# a(1) -> {b(2), c(3)} -> d(1)
DIAMOND = ({"a": 1.0, "b": 2.0, "c": 3.0, "d": 1.0}, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
# s(1) -> {a(4), b(3), c(2), d(1)} -> j(1)
FORK_JOIN = (
    {"s": 1.0, "a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0, "j": 1.0},
    [("s", x) for x in "abcd"] + [(x, "j") for x in "abcd"],
)

CASES = [
    # chain: nothing overlaps, 1 + 2 + 3 = 6 on any number of PEs; both policies keep it on PE 0
    # (the PE that just finished a is the one free latest, and the lowest-numbered free one).
    ("chain", CHAIN, 1, 6.0, 6.0),
    ("chain", CHAIN, 2, 6.0, 6.0),
    ("chain", CHAIN, 4, 6.0, 6.0),
    # diamond on 1 PE: total work 1 + 2 + 3 + 1 = 7.
    ("diamond", DIAMOND, 1, 7.0, 7.0),
    # diamond on 2 PEs: ranks d=1, b=3, c=4, a=5. a[0,1]@0; c[1,4]@0 and b[1,3]@1; d[4,5]@0.
    # Makespan 5 = critical path a-c-d. Extra PEs (4) change nothing: 5.
    ("diamond", DIAMOND, 2, 5.0, 5.0),
    ("diamond", DIAMOND, 4, 5.0, 5.0),
    # fork-join on 1 PE: 1 + (4 + 3 + 2 + 1) + 1 = 12.
    ("fork-join", FORK_JOIN, 1, 12.0, 12.0),
    # fork-join on 2 PEs: s[0,1]@0; a[1,5]@0, b[1,4]@1; c[4,6]@1; d[5,6]@0; j[6,7]@0 -> 7
    # for both (the static plan makes the same choices). Bounds: cp 1+4+1 = 6, work/2 = 6;
    # 7 is optimal here, as s and j are serial and a..d (10 s) split at best 5 + 5.
    ("fork-join", FORK_JOIN, 2, 7.0, 7.0),
    # fork-join on 4 PEs: s[0,1]@0; a[1,5]@0, b[1,4]@1, c[1,3]@2, d[1,2]@3; j[5,6]@0 -> 6 = cp.
    ("fork-join", FORK_JOIN, 4, 6.0, 6.0),
]


@pytest.mark.parametrize("name, dag, pes, static_s, dynamic_s", CASES, ids=[f"{c[0]}-{c[2]}pe" for c in CASES])
def test_hand_makespans(name, dag, pes, static_s, dynamic_s):
    r = simulate(dag, pes=pes)
    assert r.static.makespan.mean_s == static_s
    assert r.dynamic.makespan.mean_s == dynamic_s
    assert r.static.predicted_makespan_s == static_s
    assert r.comparison.static_over_dynamic == static_s / dynamic_s


def test_fork_join_two_pes_placement_and_utilization():
    r = simulate(FORK_JOIN, pes=2, policy="dynamic")
    runs = {n.name: (n.pe, n.start_s, n.end_s) for n in r.dynamic.schedule.node_runs(r.dag)}
    assert runs == {
        "s": (0, 0.0, 1.0),
        "a": (0, 1.0, 5.0),
        "b": (1, 1.0, 4.0),
        "c": (1, 4.0, 6.0),
        "d": (0, 5.0, 6.0),
        "j": (0, 6.0, 7.0),
    }
    # PE 0 busy s + a + d + j = 1 + 4 + 1 + 1 = 7 of 7; PE 1 busy b + c = 3 + 2 = 5 of 7.
    assert r.dynamic.utilization == (1.0, 5 / 7)
    # running: 1 node on [0,1), 2 on [1,6), 1 on [6,7), then 0; mean = 12 s of work / 7 s.
    assert r.dynamic.concurrency.time_s == (0.0, 1.0, 6.0, 7.0)
    assert r.dynamic.concurrency.running == (1, 2, 1, 0)
    assert r.dynamic.concurrency.peak == 2
    assert r.dynamic.concurrency.mean == 12 / 7


def test_lower_bounds_and_ranks():
    dag = from_networkx(dag_from_lists(*FORK_JOIN))
    # ranks: a 4+1=5, b 3+1=4, c 2+1=3, d 1+1=2, j 1, s 1+5=6
    assert upward_rank(dag) == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    # critical path s-a-j = 6; work 12; on 4 PEs 12/4 = 3.
    lb = lower_bounds(dag, pes=4)
    assert (lb.critical_path_s, lb.work_s, lb.work_over_pes_s) == (6.0, 12.0, 3.0)
    # Graham: 12/4 + (1 - 1/4) * 6 = 7.5
    assert lb.graham_s(4) == 7.5


def test_equal_ranks_keep_the_given_order():
    dag = from_networkx(dag_from_lists({"z": 1.0, "y": 1.0, "x": 1.0}))
    assert [dag.names[v] for v in priority_order(dag, upward_rank(dag))] == ["z", "y", "x"]


def test_dynamic_sees_every_completion_of_an_instant_before_choosing():
    # a(1) -> lo(1); b(1) -> hi1(5), hi2(5) -> z(1); 2 PEs. Ranks: b 7, a 2, hi 6, lo 1, z 1.
    # t=0: b@0, a@1. t=1: a and b both end; ready {lo, hi1, hi2}: hi1[1,6]@0, hi2[1,6]@1;
    # t=6: lo[6,7]@0, z[6,7]@1 -> 7. Had lo been dispatched on a's completion alone, before b's
    # at the same instant was seen, hi2 would start at 2 and z end at 8.
    dag = (
        {"a": 1.0, "b": 1.0, "lo": 1.0, "hi1": 5.0, "hi2": 5.0, "z": 1.0},
        [("a", "lo"), ("b", "hi1"), ("b", "hi2"), ("hi1", "z"), ("hi2", "z")],
    )
    assert simulate(dag, pes=2, policy="dynamic").dynamic.makespan.mean_s == 7.0


def test_static_loses_to_dynamic_when_a_node_runs_long():
    # Four independent nodes, 1 s each predicted, 2 PEs. Equal ranks, so the given order.
    # Static plan: a[0,1]@0, b[0,1]@1, c[1,2]@0, d[1,2]@1 -> planned 2.
    # Actual: a takes 3 s. Static: c is pinned behind a on PE 0 -> a[0,3] c[3,4]; PE 1 runs
    # b[0,1] d[1,2] then idles: makespan 4. Dynamic: PE 1 frees at 1 and takes c[1,2], then
    # d[2,3]; a ends at 3: makespan 3. The fixed order cannot move work to the idle PE.
    dag = from_networkx(dag_from_lists({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}))
    order = priority_order(dag, upward_rank(dag))
    plan = plan_static(dag, 2, order)
    assert plan.planned.makespan_s == 2.0
    actual = [3.0, 1.0, 1.0, 1.0]
    assert run_static(dag, plan, actual, 2).makespan_s == 4.0
    assert run_dynamic(dag, 2, order, actual).makespan_s == 3.0


def test_static_loses_to_dynamic_under_seeded_jitter():
    # The same story averaged: eight independent 1 s nodes on 2 PEs, CV 0.5. Without jitter both
    # make 4 s. With it, each static PE must run its four fixed nodes whatever the other PE does,
    # so the makespan is the larger of two sums of four draws; dynamic balances the load as it
    # goes. Same draws for both, so the comparison is run by run. Dynamic does not win every run
    # (a greedy pick can leave a long node for last, where a lucky fixed split would not), but it
    # wins most runs and on average (seeded: 128 against 52 of 200 runs, 5.4% on the mean).
    r = simulate(({f"n{i}": 1.0 for i in range(8)}, []), pes=2, jitter_cv=0.5, runs=200, seed=7)
    assert r.static.predicted_makespan_s == r.dynamic.predicted_makespan_s == 4.0
    c = r.comparison
    assert c.static_over_dynamic > 1.03
    assert c.static_slower_runs > 2 * c.dynamic_slower_runs


def test_same_draws_for_both_policies_and_seed_determinism():
    # On one PE every policy runs the nodes back to back: each run's makespan is the sum of that
    # run's actual durations, so equal samples mean equal draws.
    a = simulate(DIAMOND, pes=1, jitter_cv=0.3, runs=20, seed=3)
    assert a.static.makespan.samples_s == pytest.approx(a.dynamic.makespan.samples_s, rel=1e-12)
    b = simulate(DIAMOND, pes=1, jitter_cv=0.3, runs=20, seed=3)
    assert a.static.makespan.samples_s == b.static.makespan.samples_s
    c = simulate(DIAMOND, pes=1, jitter_cv=0.3, runs=20, seed=4)
    assert a.static.makespan.samples_s != c.static.makespan.samples_s


def test_steps_fork_join_two_pes():
    r = simulate(FORK_JOIN, pes=2, policy="dynamic", steps=True)
    got = [(s.time_s, s.finished, s.ready, s.fired) for s in r.dynamic.steps]
    assert got == [
        (0.0, (), ("s",), ("s",)),
        (1.0, ("s",), ("a", "b", "c", "d"), ("a", "b")),  # two PEs: c and d wait
        (4.0, ("b",), ("c", "d"), ("c",)),
        (5.0, ("a",), ("d",), ("d",)),
        (6.0, ("c", "d"), ("j",), ("j",)),
        (7.0, ("j",), (), ()),
    ]


def test_static_steps_show_a_node_waiting_for_its_turn():
    # The straggler case as a schedule of its own: a[0,3]@0 (actual 3 s), b[0,1]@1, c behind a.
    r = simulate(({"a": 3.0, "b": 1.0, "c": 1.0}, []), pes=2, policy="static", steps=True)
    # plan: ranks 3, 1, 1 -> a@0 [0,3], b@1 [0,1], c: PE 1 free at 1 (earliest) -> c@1 [1,2].
    steps = {s.time_s: s for s in r.static.steps}
    assert steps[0.0].ready == ("a", "b", "c") and steps[0.0].fired == ("a", "b")
    assert steps[1.0].fired == ("c",)


def test_percentile_linear_interpolation():
    # ranks q/100 * (n - 1): p50 of 5 values is the 3rd; p95 of [0, 10] is 0 + 0.95 * 10.
    assert percentile([1.0, 2.0, 3.0, 4.0, 100.0], 50) == 3.0
    assert percentile([0.0, 10.0], 95) == 9.5
    assert percentile([7.0], 95) == 7.0


def test_policy_selection():
    r = simulate(CHAIN, policy="static")
    assert r.dynamic is None and r.comparison is None
    assert list(r.to_dict()["policies"]) == ["static"]
    assert r.policy(Policy.STATIC) is r.static
    with pytest.raises(KeyError):
        r.policy("dynamic")


def test_empty_dag():
    r = simulate(({}, []), pes=2)
    assert r.static.makespan.mean_s == 0.0 and r.dynamic.utilization == (0.0, 0.0)
    assert r.lower_bounds.critical_path_s == 0.0


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"pes": 0}, "pes must be"),
        ({"runs": 0}, "runs must be"),
        ({"jitter_cv": -0.1}, "jitter"),
        ({"jitter_cv": float("nan")}, "jitter"),
        ({"policy": "greedy"}, "unknown policy"),
    ],
)
def test_bad_options_are_one_line_errors(kwargs, fragment):
    with pytest.raises(SimulationError, match=fragment) as info:
        simulate(CHAIN, **kwargs)
    assert "\n" not in str(info.value)


def test_bad_graphs():
    import networkx as nx

    with pytest.raises(SimulationError, match="cycle"):
        simulate(({"a": 1.0, "b": 1.0}, [("a", "b"), ("b", "a")]))
    with pytest.raises(SimulationError, match="cycle"):
        simulate(({"a": 1.0}, [("a", "a")]))
    with pytest.raises(SimulationError, match="'b'.*>= 0"):
        simulate(({"a": 1.0, "b": -1.0}, []))
    with pytest.raises(SimulationError, match="no 'duration_s'"):
        simulate(nx.DiGraph([("a", "b")]))
    with pytest.raises(SimulationError, match="undirected"):
        simulate(nx.Graph([("a", "b")]))
    with pytest.raises(SimulationError, match="names node 'c'"):
        dag_from_lists({"a": 1.0}, [("a", "c")])
    with pytest.raises(SimulationError, match="cannot simulate"):
        simulate([1, 2, 3])
