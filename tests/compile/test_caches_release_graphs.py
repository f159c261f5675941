"""The compile caches keyed by a graph's identity hold it weakly: an evaluated graph is freed once dropped.

A long generation evaluates a decode step's graph per KV length it reads; a cache that kept each
one alive grew by a whole graph per step (issue 37: 10.9 GiB for a 2,048-token generation).
"""

import gc
import weakref

import dfx
from dfx.analysis import evaluate_on
from dfx.hardware import load_profile
from dfx.costs import annotate
from dfx.roofline.per_graph import clear_per_graph


def test_an_evaluated_graph_is_freed_once_dropped():
    graph = dfx.analyze("llama-layer", hardware=[]).graph  # captured once; costed below by this test alone
    costed = annotate(graph)  # a graph of its own, which only this test holds
    result = evaluate_on(costed, load_profile("nvidia-h100-sxm"), eager=False)  # fusion, GPU tiling, schedule
    ref = weakref.ref(costed)
    del result, costed
    clear_per_graph()  # a bounded cache of the last few graphs' facts (32 entries), which holds them by design
    gc.collect()
    assert ref() is None
