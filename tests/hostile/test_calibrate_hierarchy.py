"""calibrate keeps no figure that contradicts the memory hierarchy: it measures again, then keeps the nearer\nlevel at the farther's figure (or refuses, on evidence of other load)."""


def _fake(values_by_level):
    """A stream benchmark returning the given figures per level in turn (the last one repeats)."""
    from dfx.measure.microbench import Sample

    calls = []
    sizes = {1 << 20: "L2", 1 << 30: "DRAM"}

    def measure(nbytes, device, budget_s, sync=None, slope=True):
        level = sizes[nbytes]
        calls.append(level)
        seen = calls.count(level)
        figures = values_by_level[level]
        value = figures[min(seen, len(figures)) - 1]
        return Sample(value, 1e-3, 3, f"fake {level}")

    return measure, calls


def test_a_stalled_l2_is_measured_again_and_kept_when_it_recovers():
    from dfx.measure.calibration import measure_bandwidths

    # first L2 figure 1 GB/s, 200 x below DRAM's 200 GB/s (the busy machine); the second is 400 GB/s
    measure, calls = _fake({"L2": [1e9, 400e9], "DRAM": [200e9]})
    got = measure_bandwidths({"L2": 1 << 20, "DRAM": 1 << 30}, {"L2": None}, "cpu", 1.0, measure=measure)
    assert got["L2"].value == 400e9 and got["DRAM"].value == 200e9
    assert calls == ["L2", "DRAM", "L2", "DRAM"]  # both ends of the contradiction measured again, once


def test_a_contradiction_that_survives_every_try_keeps_no_stalled_figure():
    # with no evidence of other load (this fake machine has none) a nearer level measured slower than a
    # farther one after every try is kept at the farther's figure, never at the stalled one (a refusal
    # needs evidence of load: tests/measure/test_hierarchy_settle.py)
    from dfx.measure.calibration import _REMEASURES, measure_bandwidths

    measure, calls = _fake({"L2": [1e9], "DRAM": [200e9]})
    got = measure_bandwidths({"L2": 1 << 20, "DRAM": 1 << 30}, {"L2": None}, "cpu", 1.0, measure=measure)
    assert calls.count("L2") == 1 + _REMEASURES
    assert got["L2"].value == got["DRAM"].value == 200e9


def test_close_levels_within_the_slack_are_not_contradictions():
    from dfx.measure.calibration import hierarchy_contradictions

    # 180 GB/s x 1.25 = 225 GB/s >= 200 GB/s: noise, not a stalled benchmark
    assert hierarchy_contradictions({"L2": 180e9, "DRAM": 200e9}) == []
    # 150 GB/s x 1.25 = 187.5 GB/s < 200 GB/s: a contradiction
    assert hierarchy_contradictions({"L2": 150e9, "DRAM": 200e9}) == [("L2", "DRAM")]
