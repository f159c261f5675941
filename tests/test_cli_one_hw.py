"""A second --hw where a command takes one profile is refused, not dropped (dfx.errors.refuse_repeated_hw)."""

import subprocess
import sys

import pytest


def dfx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dfx.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "args",
    [
        ["triton", "--gemm", "64,64,64", "--hw", "h100", "--hw", "a100"],  # printed the A100's kernel alone
        ["compile", "gpt2-block", "--hw", "h100", "--hw=a100"],
        ["tile", "--gemm", "64,64,64", "--hw", "h100", "--hw", "spyre"],
    ],
)
def test_a_second_hw_on_a_one_profile_command_is_refused(args):
    r = dfx(*args)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    second = "a100" if "a100" in " ".join(args) else "spyre"
    assert r.stderr == f"error: dfx {args[0]} takes one --hw, got 2 (h100, {second}); run it once per profile\n"


def test_commands_that_take_many_profiles_still_take_them():
    r = dfx("casestudy", "attention", "--seq", "256", "--hw", "ibm-spyre", "--hw", "google-tpu-v4")
    assert r.returncode == 0, r.stderr
    assert "- ibm-spyre:" in r.stdout and "- google-tpu-v4:" in r.stdout
    # one --hw is as before
    assert dfx("triton", "--gemm", "64,64,64", "--hw", "h100").returncode == 0


def test_hw_show_with_a_list_names_its_own_form_not_hw():
    # load_profile's refusal of a list says "one per --hw"; dfx hw show takes its profile as an argument
    r = dfx("hw", "show", "h100,a100")
    assert r.returncode == 2 and r.stdout == "" and "--hw" not in r.stderr
    assert (
        r.stderr
        == "error: dfx hw show takes one profile, got 'h100,a100'; show each in turn: dfx hw show h100; dfx hw show a100\n"
    )
