"""Per-node timing on a fake clock: each node's time is what it advanced the clock by; medians over runs."""

import pytest
import torch
import torch.fx

from dfx.measure.timing import (
    InterleavedRuns,
    StampedGraph,
    time_graph_nodes,
    time_interleaved,
    time_interleaved_runs,
    time_whole_graph,
)


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.run = 0

    def __call__(self) -> float:
        return self.now


CLOCK = FakeClock()
# run r of the graph: `first` takes STEPS_A[r] s and `second` STEPS_B[r] s of fake time
STEPS_A = [9.0, 1.0, 3.0, 2.0]
STEPS_B = [9.0, 5.0, 4.0, 6.0]


@torch.fx.wrap
def first(x):
    CLOCK.now += STEPS_A[CLOCK.run]
    return x + 1


@torch.fx.wrap
def second(x):
    CLOCK.now += STEPS_B[CLOCK.run]
    CLOCK.run += 1
    return x * 2


class Two(torch.nn.Module):
    def forward(self, x):
        return second(first(x))


def test_each_node_gets_the_time_between_its_start_and_end():
    gm = torch.fx.symbolic_trace(Two())
    CLOCK.now, CLOCK.run = 0.0, 0
    stamped = StampedGraph(gm, clock=CLOCK)
    out = stamped.run(torch.ones(2))
    assert torch.equal(out, torch.full((2,), 4.0))
    assert stamped.seconds == {"first": 9.0, "second": 9.0}  # placeholders and output are not timed
    assert gm.graph is not stamped.module.graph and "stamp" not in gm.code  # the user's module is untouched


def test_medians_after_warmup():
    gm = torch.fx.symbolic_trace(Two())
    CLOCK.now, CLOCK.run = 0.0, 0
    times = time_graph_nodes(gm, [torch.ones(2)], repeat=3, warmup=1, clock=CLOCK)
    # run 0 (9, 9) is warm-up; first: median(1, 3, 2) = 2; second: median(5, 4, 6) = 5
    assert times.median_s == {"first": 2.0, "second": 5.0}
    assert times.to_dict()["repeat"] == 3


def test_whole_graph_median_and_sync_calls():
    ticks = iter([0.0, 1.0, 10.0, 13.0, 20.0, 22.0, 30.0, 37.0])  # four calls: 1, 3, 2, 7 s
    syncs = []
    t = time_whole_graph(lambda: None, repeat=3, warmup=1, clock=lambda: next(ticks), sync=lambda: syncs.append(1))
    assert t == 3.0  # warm-up 1 s dropped; median(3, 2, 7)
    assert len(syncs) == 8  # before and after each of the four calls


def test_interleaved_alternates_the_stamped_and_the_plain_run():
    calls = []
    ticks = iter([0.0, 4.0, 10.0, 11.0, 20.0, 23.0, 30.0, 32.0])  # plain runs: 4 (warm-up), 1, 3, 2 s

    def parts():
        calls.append("stamped")
        return [float(len(calls))]  # 1, 3, 5, 7: the stamped run's one part

    def whole():
        calls.append("plain")

    medians, whole_s = time_interleaved(parts, whole, repeat=3, warmup=1, clock=lambda: next(ticks))
    assert calls == ["stamped", "plain"] * 4  # one after the other, not a block of each
    assert medians == [5.0]  # warm-up's 1 dropped; median(3, 5, 7)
    assert whole_s == 2.0  # warm-up's 4 s dropped; median(1, 3, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: the synchronised GPU timing path needs one")
def test_cuda_nodes_are_timed_with_synchronisation():
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).cuda())
    times = time_graph_nodes(gm, [torch.randn(8, 64, device="cuda")], repeat=3, warmup=1, sync=torch.cuda.synchronize)
    assert set(times.median_s) == {"0", "1"} and all(t > 0 for t in times.median_s.values())


def test_runs_go_on_past_repeat_until_the_window_is_filled():
    # every clock reading is 1 s after the last: each plain run takes 1 s and the stamped run's one part 0.5 s,
    # so a timed pair adds 1.5 s; a 4 s window needs ceil(4 / 1.5) = 3 pairs although repeat is 1
    now = iter(range(1000))
    runs = time_interleaved_runs(
        lambda: [0.5], lambda: None, repeat=1, warmup=1, clock=lambda: float(next(now)), min_window_s=4.0
    )
    assert runs.whole_s == (1.0, 1.0, 1.0)
    assert runs.whole_spread()["window_s"] == 4.5


def test_runs_stop_at_max_runs_when_the_window_is_never_filled():
    now = iter(range(1000))
    runs = time_interleaved_runs(
        lambda: [0.0], lambda: None, repeat=2, warmup=0, clock=lambda: float(next(now)), min_window_s=1e9, max_runs=5
    )
    assert len(runs.whole_s) == 5


def test_window_and_cap_are_checked():
    with pytest.raises(ValueError, match="min_window_s=-1"):
        time_interleaved_runs(list, lambda: None, min_window_s=-1)
    with pytest.raises(ValueError, match="max_runs=3 is below repeat=10"):
        time_interleaved_runs(list, lambda: None, repeat=10, max_runs=3)


def test_whole_spread_deciles_by_hand():
    # 21 runs of 1..21 s: inclusive deciles put the 10th percentile at rank 1 + 0.1 * 20 = 3 -> 3 s,
    # the 90th at rank 19 -> 19 s, the median at rank 11 -> 11 s; the window sums the runs (231 s), no parts
    runs = InterleavedRuns(((),) * 21, tuple(float(x) for x in range(1, 22)))
    assert runs.whole_spread() == {"runs": 21, "window_s": 231.0, "p10_s": 3.0, "p50_s": 11.0, "p90_s": 19.0}
    one = InterleavedRuns(((),), (2.0,)).whole_spread()
    assert one["p10_s"] == one["p90_s"] == 2.0 and one["runs"] == 1
