"""The caches keyed by a graph's identity hold it weakly: an evaluated graph is freed once dropped.

A long generation evaluates a decode step's graph per KV length it reads; a cache that kept each
one alive grew by a whole graph per step (issue 37: 10.9 GiB for a 2,048-token generation; Llama-2-70B
generate on Groq 935 MiB, with caches holding the last 8 to 32 graphs, where 613 MiB do).
"""

import gc
import weakref

import pytest

import dfx
from dfx.analysis import evaluate_on
from dfx.costs import annotate
from dfx.hardware import load_profile
from dfx.memo import weak_memo


def test_a_memo_entry_goes_with_its_object_and_is_made_once_while_it_lives():
    class G:
        pass

    cache, g = {}, G()
    made = weak_memo(cache, g, lambda o: [o.__class__.__name__])
    assert weak_memo(cache, g, lambda o: ["again"]) is made and len(cache) == 1
    del g
    gc.collect()
    assert cache == {}


@pytest.mark.parametrize("hw", ["nvidia-h100-sxm", "groq-lpu", "google-tpu-v4", "cerebras-wse-3", "ibm-spyre"])
def test_an_evaluated_graph_is_freed_once_dropped(hw):
    # every target's caches (data flow, fusion, tiling, residency, the TSP schedule, the MXU plans,
    # the wafer mapping, the roofline's per-graph facts) are keyed by the graph; none may keep it
    graph = dfx.analyze("llama-layer", hardware=[]).graph  # captured once; costed below by this test alone
    costed = annotate(graph)  # a graph of its own, which only this test holds
    result = evaluate_on(costed, load_profile(hw), eager=False)  # fusion, tiling, placement, schedule
    assert result.latency_s > 0
    ref = weakref.ref(costed)
    del result, costed
    gc.collect()
    assert ref() is None
