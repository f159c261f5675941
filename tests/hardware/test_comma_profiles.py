"""`--hw h100,spyre` (as dfx sweep takes it) given to a command that takes one profile per --hw."""

import pytest

from dfx.errors import DfxError
from dfx.hardware import load_profile


@pytest.mark.parametrize(
    "ref, fix",
    [
        ("h100,spyre", "--hw h100 --hw spyre"),
        ("H100, nvidia-h200", "--hw H100 --hw nvidia-h200"),
        ("h100,spyre,tpu-v4", "--hw h100 --hw spyre --hw tpu-v4"),
    ],
)
def test_a_list_of_profiles_is_named_as_such(ref, fix):
    # it was read as a quick profile: "quick profile 'h100,spyre': cannot tell what 'h100' is"
    n = ref.count(",") + 1
    with pytest.raises(DfxError, match=f"hardware '{ref}' lists {n} profiles; give one per --hw: {fix}$"):
        load_profile(ref)


def test_a_list_with_a_misspelt_profile_names_the_typo():
    # it was read as a quick profile too: "quick profile 'h100,sprye': cannot tell what 'h100' is"
    with pytest.raises(
        DfxError, match=r"'sprye' is not a known profile; did you mean 'spyre'\?\); .*--hw h100 --hw spyre$"
    ):
        load_profile("h100,sprye")


def test_quick_profiles_still_read():
    assert load_profile("peak=200T,bw=2T").compute is not None
    with pytest.raises(DfxError, match="cannot tell what '200T' is"):
        load_profile("200T,2T")  # no part a profile: the quick-profile reading, as before
