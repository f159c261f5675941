"""validate's arithmetic on hand-made timings: ratios, median and p90 of |error|, end to end, categories."""

import math

import pytest

from dfx.measure.comparison import compare, percentile


def _five():
    # predicted vs measured (seconds):   a 2/1  b 1/2  c 3/3  d 0/0.5 (a view: no work)  e 1.1/1
    predicted = {"a": 2.0, "b": 1.0, "c": 3.0, "d": 0.0, "e": 1.1, "x": 0.0}  # x: a placeholder, never run
    measured = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 0.5, "e": 1.0}
    cats = {"a": "matmul", "b": "matmul", "c": "elementwise", "d": "view", "e": "elementwise"}
    return compare(predicted, measured, 8.0, categories=cats, hardware="hw")


def test_ratio_and_abs_error_per_node():
    v = _five()
    by = {n.name: n for n in v.nodes}
    assert by["a"].ratio == 2.0 and by["a"].abs_error == 1.0  # |2 - 1| / 1
    assert by["b"].ratio == 0.5 and by["b"].abs_error == 0.5  # |1 - 2| / 2
    assert by["c"].ratio == 1.0 and by["c"].abs_error == 0.0
    assert by["e"].abs_error == pytest.approx(0.1)  # |1.1 - 1| / 1
    assert [n.name for n in v.nodes] == ["a", "b", "c", "d", "e"]  # measured order; x never ran


def test_median_and_p90_over_counted_nodes_only():
    v = _five()
    # counted errors: a 1.0, b 0.5, c 0.0, e 0.1 (d predicts 0 s: not counted) -> sorted 0, 0.1, 0.5, 1.0
    assert not {n.name: n for n in v.nodes}["d"].counted
    assert v.median_abs_error == pytest.approx((0.1 + 0.5) / 2)  # 0.3
    # p90, linear: position (4 - 1) * 0.9 = 2.7 -> 0.5 + 0.7 * (1.0 - 0.5) = 0.85
    assert v.p90_abs_error == pytest.approx(0.85)


def test_end_to_end_is_sum_of_predictions_against_the_whole_run():
    v = _five()
    # predicted 2 + 1 + 3 + 0 + 1.1 = 7.1 against 8.0 measured for the whole graph: (7.1 - 8) / 8 = -0.1125
    assert v.end_to_end.predicted_s == pytest.approx(7.1)
    assert v.end_to_end.error == pytest.approx(-0.1125)
    doc = v.to_dict()
    assert doc["schema"] == "dfx.validation/1"
    assert doc["end_to_end"] == {"predicted_s": pytest.approx(7.1), "measured_s": 8.0, "error": pytest.approx(-0.1125)}
    assert doc["uncounted"] == {"nodes": 1, "measured_s": 0.5}
    assert set(doc["nodes"][0]) >= {"name", "predicted_s", "measured_s", "ratio"}


def test_categories_median_ratio_and_why():
    cats = {c.category: c for c in _five().categories()}
    # matmul ratios 2.0 and 0.5 -> median 1.25: inside the band, no explanation
    assert cats["matmul"].median_ratio == pytest.approx(1.25) and cats["matmul"].why == ""
    # elementwise ratios 1.0 and 1.1 -> 1.05
    assert cats["elementwise"].median_ratio == pytest.approx(1.05)
    slow = compare({"a": 1.0}, {"a": 4.0}, 4.0, categories={"a": "normalization"}).categories()[0]
    assert slow.median_ratio == 0.25 and slow.why.startswith("dfx too fast")
    fast = compare({"a": 4.0}, {"a": 1.0}, 1.0, categories={"a": "matmul"}).categories()[0]
    assert fast.why.startswith("dfx too slow")
    # the roofline's reason (small GEMMs below the peak) is not given once a calibration measured them
    assert "small GEMMs" in compare({"a": 1.0}, {"a": 4.0}, 4.0, categories={"a": "matmul"}).categories()[0].why
    calibrated = compare(
        {"a": 1.0}, {"a": 4.0}, 4.0, categories={"a": "matmul"}, run={"calibration": {"gemm_table": []}}
    )
    why = calibrated.categories()[0].why
    assert why.startswith("dfx too fast") and "small GEMMs" not in why and "run.drift" in why


def test_roofline_figures_use_the_roofline_times():
    v = compare({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, 2.0, roofline={"a": 3.0, "b": 1.5})
    fig = v.roofline_figures()
    assert fig["median_abs_error"] == pytest.approx((2.0 + 0.5) / 2)  # |3-1|/1, |1.5-1|/1
    assert fig["end_to_end_error"] == pytest.approx((4.5 - 2.0) / 2.0)


def test_percentile_boundaries():
    assert percentile([7.0], 90) == 7.0
    assert math.isnan(percentile([], 90))
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 90) == pytest.approx(4.6)  # 4 * 0.9 = 3.6 -> 4 + 0.6


def test_a_measured_node_without_prediction_is_an_error():
    with pytest.raises(KeyError, match="zz"):
        compare({"a": 1.0}, {"a": 1.0, "zz": 1.0}, 1.0)


def test_a_view_charged_its_dispatch_stays_out_of_the_per_node_figures():
    # a: 2 s for 1 measured (100%), v (a view): 1 for 4, b: 3 for 3 (0%); median over a and b: 50%
    v = compare(
        {"a": 2.0, "v": 1.0, "b": 3.0},
        {"a": 1.0, "v": 4.0, "b": 3.0},
        8.0,
        categories={"a": "elementwise", "v": "view", "b": "matmul"},
    )
    assert v.median_abs_error == pytest.approx(0.5)
    # end to end: 6 predicted over 8 measured, the view's 1 s included
    assert v.end_to_end.predicted_s == pytest.approx(6.0)
