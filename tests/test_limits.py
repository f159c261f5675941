"""dfx.limits.check_tokens: the sequence and tokens-per-pass limits, at their edges."""

from __future__ import annotations

import pytest

from dfx.errors import DfxError
from dfx.limits import MAX_SEQ, MAX_TOKENS, check_tokens


def test_the_limits_are_the_documented_powers_of_two():
    assert MAX_SEQ == 16_777_216  # 2**24
    assert MAX_TOKENS == 67_108_864  # 2**26


def test_a_seq_at_the_limit_passes_and_one_above_is_named():
    check_tokens(1, 16_777_216)
    with pytest.raises(DfxError) as info:
        check_tokens(1, 16_777_217)
    assert str(info.value) == (
        "--seq 16,777,217 is above dfx's limit of 16,777,216 tokens (2**24, longer than any published "
        "context window); give a smaller --seq"
    )


def test_batch_times_seq_is_held_to_the_tokens_per_pass():
    check_tokens(4, 16_777_216)  # 4 x 2**24 = 2**26, exactly the limit
    with pytest.raises(DfxError) as info:
        check_tokens(65_536, 2_048)  # 2**16 x 2**11 = 2**27 = 134,217,728
    assert str(info.value) == (
        "--batch 65,536 x --seq 2,048 = 134,217,728 tokens is above dfx's limit of 67,108,864 (2**26) "
        "per pass; give a smaller --batch or --seq"
    )


def test_a_batch_without_seq_counts_one_token_each_and_none_is_not_given():
    check_tokens(67_108_864, None)
    check_tokens(None, None)
    check_tokens(None, 16_777_216)
    with pytest.raises(DfxError, match=r"^--batch 67,108,865 is above dfx's limit of 67,108,864 \(2\*\*26"):
        check_tokens(67_108_865, None)


def test_the_flags_named_are_the_callers():
    with pytest.raises(DfxError) as info:
        check_tokens(5, 16_777_216, batch_name="sweep batch", seq_name="sweep seq")  # 5 x 2**24 = 83,886,080
    assert str(info.value) == (
        "sweep batch 5 x sweep seq 16,777,216 = 83,886,080 tokens is above dfx's limit of 67,108,864 (2**26) "
        "per pass; give a smaller sweep batch or sweep seq"
    )
