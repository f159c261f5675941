"""Every number dfx gives, recorded and compared: the guard of a restructuring that must change none.

``record DIR`` writes one ``dfx.analysis/1`` document per case (each built-in model on every shipped
profile: the forward pass, each inference phase of the decoders, a training step, and 8 chips), as
``dfx analyze ... --json`` would print it, with the fields that differ between two runs of the same
code (timestamps, versions, wall times) removed. ``compare A B`` lists every case whose document
differs, with the first differing paths, and exits 1 if a value changed or was removed in any case.
Keys only B has (a profile added to the shipped set, a field added to the document) are listed
apart and do not fail the comparison.

    python bench/golden_numbers.py record out/golden-before
    ... change the code ...
    python bench/golden_numbers.py record out/golden-after
    python bench/golden_numbers.py compare out/golden-before out/golden-after

``--only NAME`` records the cases whose file name contains NAME. Small sizes keep a run to minutes on a
2-core machine (seq 64; prompt 32, 16 output tokens, a 48-token KV cache); the models' structure, and
so every code path, is the one a full-size run takes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Iterator

# Keys whose values change between two runs of the same code.
_VOLATILE = frozenset({"created", "created_at", "timestamp", "dfx_version", "torch_version", "wall_s", "elapsed_s"})
_SEQ = 64
_PHASES: dict[str, dict[str, Any]] = {
    "prefill": {"phase": "prefill", "prompt_len": 32},
    "decode": {"phase": "decode", "kv_len": 48, "batch": 2},
    "generate": {"phase": "generate", "prompt_len": 32, "output_len": 16},
}


def cases() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(case name, model, analyze keyword arguments)`` for every case, every profile asked at once."""
    from dfx.hardware import list_profiles
    from dfx.models import PRESETS
    from dfx.models.decode import DECODER_BUILTINS

    profiles = [p if isinstance(p, str) else p.id for p in list_profiles()]
    for model in sorted(PRESETS):
        base = {"hardware": profiles, "dtype": "bf16"}
        yield f"{model}.forward", model, {**base, "seq": _SEQ}
        yield f"{model}.chips8", model, {**base, "seq": _SEQ, "chips": 8}
        yield f"{model}.train", model, {**base, "seq": _SEQ, "train": True}
        if model in DECODER_BUILTINS:
            for phase, kwargs in _PHASES.items():
                yield f"{model}.{phase}", model, {**base, **kwargs}
    for phase, kwargs in _PHASES.items():
        yield f"hf-gpt2.{phase}", "hf:gpt2", {"hardware": profiles, "dtype": "bf16", **kwargs}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def record(out: Path, only: str | None) -> int:
    import warnings

    import dfx
    from dfx.errors import DfxError

    out.mkdir(parents=True, exist_ok=True)
    for name, model, kwargs in cases():
        if only and only not in name:
            continue
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                doc = _strip(dfx.analyze(model, **kwargs).to_dict())
            except DfxError as exc:  # a refusal is a result too: it must not change either
                doc = {"refused": str(exc)}
        (out / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    return 0


def _diff(a: Any, b: Any, path: str = "") -> Iterator[str]:
    if type(a) is not type(b):
        yield f"{path}: {a!r:.60} -> {b!r:.60}"
    elif isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                yield f"{path}/{key}: {'added' if key not in a else 'removed'}"
            else:
                yield from _diff(a[key], b[key], f"{path}/{key}")
    elif isinstance(a, list):
        if len(a) != len(b):
            yield f"{path}: {len(a)} items -> {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _diff(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: {a!r:.60} -> {b!r:.60}"


def compare(before: Path, after: Path) -> int:
    changed = extended = 0
    for old in sorted(before.glob("*.json")):
        new = after / old.name
        if not new.is_file():
            print(f"{old.stem}: missing in {after}")
            changed += 1
            continue
        diffs = list(_diff(json.loads(old.read_text()), json.loads(new.read_text())))
        added = [d for d in diffs if d.endswith(": added")]
        others = [d for d in diffs if not d.endswith(": added")]
        if others:
            changed += 1
            print(f"{old.stem}: {len(others)} values changed or removed, first: " + "; ".join(others[:4]))
        elif added:
            extended += 1
            print(f"{old.stem}: every value unchanged; {len(added)} keys added: " + "; ".join(added[:4]))
    total = len(list(before.glob("*.json")))
    print(f"{total - changed} of {total} cases keep every value ({extended} of them with keys added)")
    return 1 if changed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--only")
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out, args.only)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
