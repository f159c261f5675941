"""An empty dtype (an unset shell variable: --dtype "$DT") is refused by name, never read as the default."""

import pytest

import dfx
from dfx.costs.precision import Precision
from dfx.errors import DfxError


def test_precision_refuses_empty_weight_and_kv_formats():
    # None means "as the activations"; before, "" meant it too
    assert Precision.of("bf16", None, None).weight == "bfloat16"
    with pytest.raises(DfxError, match="unknown --weight-dtype ''"):
        Precision.of("bf16", "")
    with pytest.raises(DfxError, match="unknown --kv-dtype ''"):
        Precision.of("bf16", None, "")
    with pytest.raises(DfxError, match="unknown --dtype ''"):
        Precision.of("")


def test_analyze_refuses_an_empty_dtype_instead_of_fp32():
    # `dfx analyze gpt2-block --dtype ''` analysed the block in float32 and exited 0
    with pytest.raises(DfxError, match="unknown dtype ''"):
        dfx.analyze("mlp", hardware=[], dtype="")
    with pytest.raises(DfxError, match="unknown --weight-dtype ''"):
        dfx.analyze("gpt2-block", hardware=["h100"], seq=8, phase="decode", weight_dtype="")
