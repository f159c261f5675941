"""Regenerate the README's pictures in docs/images/ from the built-in GPT-2 block.

    .venv/bin/python scripts/make_readme_images.py            # GPT-2 block: DAG and roofline
    .venv/bin/python scripts/make_readme_images.py --llama    # also a whole Llama-2-7B, module level, folded

The pictures come from the export document only (``Analysis.to_dict()``), as ``dfx report`` draws
them; review the regenerated images in the diff.
"""

from __future__ import annotations

import argparse
from pathlib import Path

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
HARDWARE = ["nvidia-h100-sxm", "ibm-spyre"]


def _pictures(model: str, level: str, **kwargs) -> dict[str, str | bytes]:
    from dfx.analysis import analyze
    from dfx.viz import render_pictures

    doc = analyze(model, hardware=HARDWARE, **kwargs).to_dict()
    pictures = render_pictures(doc, level=level)
    if pictures.notes:
        raise SystemExit("; ".join(pictures.notes))
    return pictures.files


def main() -> None:
    from dfx.report.files import write_outputs

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama", action="store_true", help="also draw hf:llama-2-7b at seq 64 (about a minute)")
    args = parser.parse_args()
    gpt2 = _pictures("gpt2-block", "op")
    files = {"gpt2-block-dag.png": gpt2["dag.png"], "gpt2-block-roofline.png": gpt2["roofline.png"]}
    if args.llama:
        llama = _pictures("hf:llama-2-7b", "module", seq=64)
        files["llama-2-7b-dag-module.png"] = llama["dag.png"]
    for path in write_outputs(IMAGES, files, force=True):  # the script's own outputs: regenerated on purpose
        print(path)


if __name__ == "__main__":
    main()
