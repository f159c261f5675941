"""``dfx ops``: which cost rule covers each op of torch's Core ATen opset.

``dfx.cli`` calls :func:`register`. Only typer is imported here; the command imports its work
when it runs. Thin: list the opset (:mod:`dfx.capture.opset`), look up the rules
(:mod:`dfx.costs.opset`), print or write.
"""

from __future__ import annotations

import json
import sys

import typer

__all__ = ["register"]


def ops(
    show_all: bool = typer.Option(False, "--all", help="One row per op: its rule, module and category."),
    as_json: bool = typer.Option(False, "--json", help="Print the coverage as JSON (dfx.opset_coverage/1)."),
) -> None:
    """Cost-rule coverage of torch's Core ATen opset: ops with a rule, with a documented reason, missing."""
    from dfx.capture.opset import core_aten_ops, torch_version
    from dfx.costs.opset import opset_coverage
    from dfx.report.out import stdout as out

    cov = opset_coverage(core_aten_ops())
    if as_json:
        doc = cov.to_dict() | {"torch": torch_version()}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return
    from rich.table import Table

    rows = cov.ops if show_all else cov.noted + cov.missing
    table = Table(title="Core ATen ops " + ("and their cost rules" if show_all else "with a note or no rule"))
    for col in ("op", "rule", "category", "note"):
        table.add_column(col, overflow="fold")
    for o in rows:
        table.add_row(o.op, o.rule_key or "MISSING", o.category or "-", o.note or "")
    out.print(table)
    out.print(
        f"Core ATen opset (torch {torch_version()}): {len(cov.ops)} ops, {len(cov.covered)} with a cost "
        f"rule, {len(cov.noted)} of them bytes-only or with a documented reason, {len(cov.missing)} missing"
    )


def register(app: typer.Typer) -> None:
    app.command("ops")(ops)
