"""The per-operator comparison of fusion groups, on hand-made groupings."""

from dfx.targets import compile_for
from dfx.compile.compare import compare_groups
from dfx.costs import annotate
from dfx.hardware import load_profile

from .test_fusion import _chain3, _sum_then_scale


def test_same_grouping_agrees_and_a_split_one_does_not():
    costed = annotate(_chain3())
    program = compile_for(costed, load_profile("h100"))  # one kernel: relu, neg, exp
    assert compare_groups(program, costed, [{"relu", "neg", "exp"}]).fraction == 1.0
    split = compare_groups(program, costed, [{"relu"}, {"neg", "exp"}])
    assert split.fraction == 0.0  # no operator's group matches: 0 of 3
    assert [d.node for d in split.disagreements] == ["relu", "neg", "exp"]


def test_a_node_recomputed_in_two_kernels_agrees_where_dfx_put_it():
    costed = annotate(_sum_then_scale())
    program = compile_for(costed, load_profile("h100"))  # dfx: {s, y}, {t}
    # a compiler that recomputes y inside t's kernel too: y is in two groups
    result = compare_groups(program, costed, [{"s", "y"}, {"y", "t"}])
    assert result.fraction == 1.0  # y sits with s as in dfx; t's group is {t} once y's copy is left out
    # but a compiler that put y only with t disagrees on s, y and t: 0 of 3
    assert compare_groups(program, costed, [{"s"}, {"y", "t"}]).fraction == 0.0
