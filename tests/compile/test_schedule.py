"""The kernel list schedule on finite cores: hand-derived makespans for the static and dynamic policies."""

import pytest

from dfx.compile import Kernel, KernelKind, Policy, Program, list_schedule, policy_for
from dfx.compile.schedule import priority_order, upward_rank


def _program(*kernels: tuple[str, int, tuple[str, ...]], commitment: str = "dynamic") -> Program:
    """Kernels given as (name, cores, deps), in program order."""
    ks = tuple(Kernel(n, (n,), KernelKind.GEMM, 0, 0, deps=deps, cores=c) for n, c, deps in kernels)
    return Program("g", "p", "eager", commitment, ks)


@pytest.mark.parametrize("policy", list(Policy))
def test_two_independent_kernels_on_two_cores(policy):
    # 1 s and 2 s, nothing between them, on a 2-core machine.
    # Each needing both cores: one after the other, 1 + 2 = 3 s.
    both = _program(("a", 2, ()), ("b", 2, ()))
    assert list_schedule(both, {"a": 1.0, "b": 2.0}, 2, policy).makespan_s == 3.0
    # Each needing one core: side by side, max(1, 2) = 2 s.
    one = _program(("a", 1, ()), ("b", 1, ()))
    assert list_schedule(one, {"a": 1.0, "b": 2.0}, 2, policy).makespan_s == 2.0


@pytest.mark.parametrize("policy", list(Policy))
def test_a_dependency_serialises_even_with_free_cores(policy):
    # a -> b, 1 core each on 4 cores: b waits for a, 1 + 2 = 3 s.
    p = _program(("a", 1, ()), ("b", 1, ("a",)))
    s = list_schedule(p, {"a": 1.0, "b": 2.0}, 4, policy)
    assert [(x.start_s, x.end_s) for x in s.slots] == [(0.0, 1.0), (1.0, 3.0)]


def test_static_issues_in_order_dynamic_backfills():
    # On 2 cores: k1 (1 core, 2 s), k2 (2 cores, 1 s), k3 (1 core, 1 s), all independent.
    # Ranks are their durations (no successors): 2, 1, 1, so the order is k1, k2, k3.
    # static: k1 at 0 on one core; k2 needs both, waits for k1: 2..3; k3 may not overtake k2,
    #   and at 2 k2 holds both cores: 3..4. Makespan 4 s.
    # dynamic: at 0 k1 starts, k2 does not fit, k3 fits on the other core: 0..1; k2 at 2..3. 3 s.
    p = _program(("k1", 1, ()), ("k2", 2, ()), ("k3", 1, ()))
    d = {"k1": 2.0, "k2": 1.0, "k3": 1.0}
    static = list_schedule(p, d, 2, Policy.STATIC)
    dynamic = list_schedule(p, d, 2, Policy.DYNAMIC)
    assert [(x.start_s, x.end_s) for x in static.slots] == [(0.0, 2.0), (2.0, 3.0), (3.0, 4.0)]
    assert [(x.start_s, x.end_s) for x in dynamic.slots] == [(0.0, 2.0), (2.0, 3.0), (0.0, 1.0)]
    assert (static.makespan_s, dynamic.makespan_s) == (4.0, 3.0)


def test_upward_rank_and_priority_order():
    # a -> b (3 s), a -> c (1 s): rank(b) = 3, rank(c) = 1, rank(a) = 1 + 3 = 4
    p = _program(("a", 1, ()), ("c", 1, ("a",)), ("b", 1, ("a",)))
    d = {"a": 1.0, "b": 3.0, "c": 1.0}
    assert upward_rank(p, d) == [4.0, 1.0, 3.0]
    assert priority_order(p, d) == [0, 2, 1]


def test_zero_duration_kernels_and_empty_program():
    p = _program(("a", 1, ()), ("b", 1, ("a",)), ("c", 1, ("b",)))
    s = list_schedule(p, {"a": 0.0, "b": 0.0, "c": 2.0}, 1, Policy.DYNAMIC)
    assert s.makespan_s == 2.0
    assert list_schedule(_program(), {}, 4, Policy.STATIC).makespan_s == 0.0


def test_collectives_take_no_cores_and_chips_are_separate():
    # Two 1 s kernels each needing all 2 cores, on chips 0 and 1: side by side. A collective
    # (0 cores) runs beside them.
    ks = (
        Kernel("a", ("a",), KernelKind.GEMM, 0, 0, cores=2, chip=0),
        Kernel("b", ("b",), KernelKind.GEMM, 0, 0, cores=2, chip=1),
        Kernel("r", ("r",), KernelKind.COLLECTIVE, 0, 0, cores=0),
    )
    s = list_schedule(Program("g", "p", "x", "static", ks), {"a": 1.0, "b": 1.0, "r": 1.0}, 2, Policy.STATIC)
    assert s.makespan_s == 1.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="needs 3 cores"):
        list_schedule(_program(("a", 3, ())), {"a": 1.0}, 2, Policy.STATIC)
    with pytest.raises(ValueError, match="duration -1.0"):
        list_schedule(_program(("a", 1, ())), {"a": -1.0}, 2, Policy.STATIC)


@pytest.mark.parametrize("policy", list(Policy))
def test_a_cycle_between_kernels_is_refused_not_left_unscheduled(policy):
    # a reads b and b reads a (a fusion through an unpriced op once made such a pair): the ready
    # list never starts either, and the in-order issue would read b's end before b ran
    cycle = _program(("a", 1, ("b",)), ("b", 1, ("a",)))
    with pytest.raises(ValueError, match="'a' reads 'b', which come.s. after it"):
        list_schedule(cycle, {"a": 1.0, "b": 2.0}, 2, policy)


def test_policy_follows_the_commitment():
    assert policy_for("static") is Policy.STATIC
    assert policy_for("dynamic") is Policy.DYNAMIC
    assert policy_for("mixed") is Policy.DYNAMIC  # placement fixed, firing at run time
