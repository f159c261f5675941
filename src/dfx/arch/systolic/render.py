"""Pictures of a :class:`~dfx.arch.systolic.stepsim.StepTrace`: text frames and an animated GIF or PNG strip.

matplotlib is imported only inside :func:`animate`; the GIF needs pillow (a matplotlib dependency),
and without it a PNG strip of the frames is written instead.
"""

from __future__ import annotations

from pathlib import Path

from dfx.arch.systolic.stepsim import Frame, StepTrace
from dfx.errors import DfxError

__all__ = ["animate", "format_frame", "text_frames"]

_ROLE = {
    "ws": ("weights", "inputs ->", "psums v"),
    "is": ("inputs", "weights ->", "psums v"),
    "os": ("accumulators", "X ->", "W v"),
}
_MAX_STRIP_FRAMES = 40  # a PNG strip of more frames is unreadable


def _cell(value: float | None) -> str:
    return "." if value is None else f"{value:g}"


def _grid_lines(grid, title: str) -> list[str]:
    """The title, then one line per row, every cell right-aligned to the widest."""
    cellw = max(len(_cell(v)) for row in grid for v in row) + 1
    return [title, *("".join(_cell(v).rjust(cellw) for v in row) for row in grid)]


def format_frame(frame: Frame, dataflow: str) -> str:
    """One frame as text: the three grids side by side, then what left the array."""
    names = _ROLE[dataflow]
    blocks = [_grid_lines(g, t) for g, t in zip((frame.stationary, frame.moving, frame.psums), names)]
    widths = [max(len(line) for line in b) for b in blocks]
    rows = ["   ".join(b[i].ljust(w) for b, w in zip(blocks, widths)) for i in range(len(blocks[0]))]
    head = f"cycle {frame.cycle}  fold {frame.fold}  {frame.phase}"
    if frame.phase == "drain":
        head += " (not counted by SCALE-Sim)"
    out = [head, *rows]
    if frame.emitted:
        out.append("out: " + ", ".join(f"Y[{i},{j}]={v:g}" for i, j, v in frame.emitted))
    return "\n".join(out)


def text_frames(trace: StepTrace) -> str:
    """Every frame, then the result and the cycle counts."""
    parts = [format_frame(f, trace.dataflow.value) for f in trace.frames]
    parts.append(f"result Y = X @ W:\n{trace.result}")
    parts.append(
        f"cycles: {trace.cycles} (SCALE-Sim count)"
        + (f", {trace.cycles_with_drain} with the output drain" if trace.cycles_with_drain != trace.cycles else "")
    )
    return "\n\n".join(parts)


def _draw(ax, frame: Frame, dataflow: str) -> None:
    ax.clear()
    ax.set_axis_off()
    rows, cols = len(frame.stationary), len(frame.stationary[0])
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -1.2)
    names = _ROLE[dataflow]
    for r in range(rows):
        for c in range(cols):
            busy = frame.moving[r][c] is not None
            ax.add_patch(_rect(r, c, "#ffd27f" if busy else "#e8eef7"))
            lines = [f"{names[0][0]}={_cell(frame.stationary[r][c])}"]
            if busy:
                lines.append(f"{names[1][0]}={_cell(frame.moving[r][c])}")
            if frame.psums[r][c] is not None:
                lines.append(f"{names[2][0]}={_cell(frame.psums[r][c])}")
            ax.text(c, r, "\n".join(lines), ha="center", va="center", fontsize=8)
    out = ", ".join(f"Y[{i},{j}]={v:g}" for i, j, v in frame.emitted)
    ax.set_title(f"cycle {frame.cycle} fold {frame.fold} {frame.phase}" + (f"\nout: {out}" if out else ""), fontsize=9)


def _rect(r: int, c: int, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((c - 0.45, r - 0.45), 0.9, 0.9, facecolor=color, edgecolor="#555555")


def animate(trace: StepTrace, path: str | Path, *, fps: int = 2, force: bool = False) -> Path:
    """Write the frames as an animated GIF at ``path`` (a PNG strip next to it without pillow).

    The file is drawn under a temporary name in the same folder and renamed over ``path`` only when
    complete; an existing ``path`` is kept unless ``force``.

    Returns the path written.

    Raises
    ------
    DfxError
        matplotlib missing; ``path``'s folder missing, ``path`` a folder, or existing without ``force``.
    """
    import os
    import tempfile

    from dfx.report.files import _umask, check_target_file

    target = check_target_file(path, "--animate", force=force)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix or ".gif", dir=target.parent)
    os.close(fd)
    try:
        written = _animate(trace, Path(tmp), fps)
        final = target if written.suffix == Path(tmp).suffix else target.with_suffix(written.suffix)
        if final != target:
            check_target_file(final, "--animate", force=force)
        os.chmod(written, 0o666 & ~_umask())  # mkstemp makes 0600; give the user's usual mode
        os.replace(written, final)
        return final
    finally:
        Path(tmp).unlink(missing_ok=True)
        Path(tmp).with_suffix(".png").unlink(missing_ok=True)


def _animate(trace: StepTrace, path: Path, fps: int) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.animation import FuncAnimation, PillowWriter
    except ImportError:
        raise DfxError("--animate needs matplotlib (pip install matplotlib)") from None
    path = Path(path)
    flow = trace.dataflow.value
    rows, cols = trace.rows, trace.cols
    try:
        import PIL  # noqa: F401  (PillowWriter's backend)
    except ImportError:
        frames = trace.frames[:_MAX_STRIP_FRAMES]
        fig, axes = plt.subplots(1, len(frames), figsize=(1.0 * cols * len(frames), 1.0 * rows + 0.8), squeeze=False)
        for ax, frame in zip(axes[0], frames):
            _draw(ax, frame, flow)
        path = path.with_suffix(".png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        return path
    fig, ax = plt.subplots(figsize=(1.1 * cols + 1, 1.1 * rows + 1))
    anim = FuncAnimation(fig, lambda i: _draw(ax, trace.frames[i], flow), frames=len(trace.frames))
    anim.save(str(path), writer=PillowWriter(fps=fps))
    plt.close(fig)
    return path
