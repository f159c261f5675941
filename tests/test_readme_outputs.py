"""The README's commands write only under out/ (issue 18: analysis.json, my-cpu.*, val/ were left in the root)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line.split("#", 1)[0] for block in blocks for line in block.splitlines() if "dfx " in line]


def test_every_written_path_is_under_out():
    targets = []
    for line in _commands():
        targets += re.findall(r"--out\s+(\S+)", line) + re.findall(r"(?<![-\w])>\s*(\S+)", line)
    assert targets, "the README has no command that writes"
    outside = [t for t in targets if not t.startswith("out/")]
    assert not outside, outside


def test_files_the_readme_reads_exist_or_are_written_first():
    for line in _commands():
        for path in re.findall(r"\b(examples/\S+)", line):
            assert (ROOT / path).is_file(), path
