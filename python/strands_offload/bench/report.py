"""Run the benchmark cases and write the report: a markdown table, a JSON file and a PNG chart.

Each case is timed in this one process, the reference and ours alternating round by round (so a
busy machine slows both alike); the figure is the median of the rounds. The chart needs
matplotlib (``pip install "strands-offload[bench]"``); without it the chart is skipped and said so.
"""

from __future__ import annotations

import gc
import importlib
import json
import logging
import os
import platform
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import _seam
from .cases import Case, CaseUnavailable, all_cases

__all__ = ["BenchReport", "ReportWriteError", "Row", "run_bench", "write_outputs"]

logger = logging.getLogger(__name__)

# Rounds at least, and the seconds (both members together) after which no more rounds start.
_QUICK = (3, 0.3)
_FULL = (7, 4.0)
_MAX_ROUNDS = 50


@dataclass
class Row:
    """One measured case."""

    group: str
    operation: str
    reference_seconds: float
    ours_seconds: float
    rounds: int

    @property
    def ratio(self) -> float:
        """Reference time over ours (above 1: we are faster)."""
        return self.reference_seconds / self.ours_seconds if self.ours_seconds > 0 else float("inf")


@dataclass
class BenchReport:
    """What a run measured and what it skipped."""

    quick: bool
    rows: list[Row] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    #: Session -> policy -> billed figures, from the simulated prompt cache (``cache_sessions``).
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def table(self) -> str:
        """The markdown table of medians and ratios."""
        lines = [
            "| operation | reference (median) | ours (median) | ratio |",
            "|---|---:|---:|---:|",
        ]
        for row in self.rows:
            lines.append(
                f"| {row.group} | {_duration(row.reference_seconds)} | {_duration(row.ours_seconds)} "
                f"| {row.ratio:,.1f}x |"
            )
        if self.sessions:
            from .cache_sessions import table

            lines += ["", "Billed input with a simulated prompt cache (token equivalents):", "", table(self.sessions)]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data, with the environment it ran in."""
        from .. import __version__

        return {
            "strands_offload": __version__,
            "strands_agents": _seam.strands_version(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "quick": self.quick,
            "seconds": round(self.seconds, 2),
            "cases": [{**asdict(row), "ratio": row.ratio} for row in self.rows],
            "skipped": [{"group": group, "reason": reason} for group, reason in self.skipped],
            "prompt_cache": {
                shape: {policy: asdict(figures) for policy, figures in rows.items()}
                for shape, rows in self.sessions.items()
            },
        }


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _time(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def measure(case: Case, quick: bool) -> Row:
    """Time one case: one warm-up call each, then alternating rounds until the budget is spent.

    Raises:
        CaseUnavailable: When the case cannot run here.
    """
    reference, ours = case.prepare()  # also the warm-up: both ran once
    minimum, budget = _QUICK if quick else _FULL
    times: tuple[list[float], list[float]] = ([], [])
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection landing in one member's round would skew a small case
    try:
        while len(times[0]) < _MAX_ROUNDS:
            times[0].append(_time(reference))
            times[1].append(_time(ours))
            if len(times[0]) >= minimum and sum(times[0]) + sum(times[1]) >= budget:
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return Row(case.group, case.operation, statistics.median(times[0]), statistics.median(times[1]), len(times[0]))


def _progress(cases: list[Case], show: bool) -> Iterable[Case]:
    if not show:
        return cases
    try:
        tqdm = importlib.import_module("tqdm").tqdm
    except ImportError:
        return cases
    bar: Iterable[Case] = tqdm(cases, desc="bench", unit="case", file=sys.stderr, dynamic_ncols=True)
    return bar


def chart(report: BenchReport, path: Path) -> str | None:
    """Draw the ratios per operation on a log scale into ``path``; the reason when it cannot."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        pyplot = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return 'matplotlib is not installed (pip install "strands-offload[bench]")'
    rows = report.rows
    operations = list(dict.fromkeys(row.operation for row in rows))
    colours = pyplot.get_cmap("tab10")
    figure, axes = pyplot.subplots(figsize=(10, 0.32 * len(rows) + 1.6))
    positions = list(range(len(rows)))[::-1]
    axes.barh(
        positions,
        [row.ratio for row in rows],
        color=[colours(operations.index(row.operation) % 10) for row in rows],
    )
    axes.set_yticks(positions, [row.group for row in rows], fontsize=8)
    axes.set_xscale("log")
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_xlabel("speed ratio: reference median / strands-offload median (log scale; right of 1 = faster)")
    for position, row in zip(positions, rows, strict=True):
        axes.annotate(
            f"{row.ratio:,.1f}x",
            (row.ratio, position),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    kind = "quick run" if report.quick else "full run"
    axes.set_title(
        f"strands-offload vs strands-agents {_seam.strands_version()} ({kind}, Python {sys.version.split()[0]})"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120, format="png")
    pyplot.close(figure)
    return None


def all_sessions(quick: bool) -> list[str]:
    """The prompt-cache sessions the report plays: the API session alone when ``quick``."""
    from .cache_sessions import SHAPES

    return ["api"] if quick else list(SHAPES)


def run_bench(
    quick: bool = False, out: Path | str = "strands-offload-bench", progress: bool = True
) -> tuple[BenchReport, str]:
    """Run every case and write ``results.md``, ``results.json`` and ``chart.png`` into ``out``.

    Args:
        quick: Small and medium inputs only, fewer rounds (under a minute on two cores).
        out: The output folder (created when missing); the three files replace earlier ones
            together or not at all.
        progress: Show a progress bar on standard error (when tqdm is installed).

    Returns:
        The report and the text to print: the table and where the files went.

    Raises:
        ReportWriteError: If the folder cannot be created (before any measuring) or the files
            cannot be written.
    """
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ReportWriteError(f"--out {folder} is a file, not a folder; pass a folder for the report")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportWriteError(f"cannot create the folder {folder}: {exc.strerror or exc}") from exc
    # Measure the SDK as installed: a previous accelerate() in this process would blur the comparison.
    from .._accelerate import deaccelerate, is_accelerated

    was_accelerated = is_accelerated()
    deaccelerate()
    report = BenchReport(quick=quick)
    started = time.perf_counter()
    try:
        for case in _progress(all_cases(quick), progress):
            try:
                report.rows.append(measure(case, quick))
            except CaseUnavailable as why:
                report.skipped.append((case.group, str(why)))
                logger.info("case=<%s>, reason=<%s> | skipped", case.group, why)
    finally:
        if was_accelerated:
            from .._accelerate import accelerate

            accelerate()
    for shape in all_sessions(quick):
        from .cache_sessions import POLICIES, run

        report.sessions[shape] = {policy: run(shape, policy) for policy in POLICIES}
    report.seconds = time.perf_counter() - started
    table = report.table()
    notes = [table, ""]
    for group, reason in report.skipped:
        notes.append(f"skipped: {group}: {reason}")
    written, why_not, removed = write_outputs(folder, report, table)
    if why_not:
        notes.append(f"chart skipped: {why_not}")
    if removed:
        notes.append("removed the chart.png of an earlier run (this run has no chart)")
    notes.append(f"wrote {', '.join(written)} to {folder} in {report.seconds:.0f} s")
    return report, "\n".join(notes)


class ReportWriteError(Exception):
    """The report could not be written; no earlier output was replaced."""


def _temporary(folder: Path, name: str) -> Path:
    """A new empty file beside ``name`` (created with the umask's permissions, as the final file would be)."""
    while True:
        path = folder / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return path


def write_outputs(folder: Path, report: BenchReport, table: str) -> tuple[list[str], str | None, bool]:
    """Write ``results.md``, ``results.json`` and ``chart.png`` into ``folder``, all or none.

    Each file is first written to a temporary file beside its final name; only when every one is
    complete are they renamed over the old outputs, so a failure (a full disk, a chart that cannot be
    drawn) leaves the previous run's files as they were. A ``chart.png`` of an earlier run is
    removed when this run has no chart, so the folder never pairs new tables with an old chart.

    Returns:
        The names written, why the chart was skipped (or ``None``), and whether an old chart was removed.

    Raises:
        ReportWriteError: If a file cannot be written; the temporary files are removed.
    """
    staged: dict[str, Path] = {}
    try:
        staged["results.md"] = _temporary(folder, "results.md")
        staged["results.md"].write_text(table + "\n", encoding="utf-8")
        staged["results.json"] = _temporary(folder, "results.json")
        staged["results.json"].write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        staged["chart.png"] = _temporary(folder, "chart.png")
        why_not = chart(report, staged["chart.png"])
        if why_not:
            staged.pop("chart.png").unlink()
    except BaseException as exc:
        for path in staged.values():
            path.unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            raise
        raise ReportWriteError(
            f"cannot write the report to {folder}: {exc.strerror or exc}; no earlier output was replaced"
        ) from exc
    # Renames within one folder only fail when the folder itself goes wrong under us.
    renamed: list[str] = []
    try:
        for name, path in staged.items():
            os.replace(path, folder / name)
            renamed.append(name)
        removed = False
        if why_not and (folder / "chart.png").is_file():
            (folder / "chart.png").unlink()
            removed = True
    except OSError as exc:
        for name, path in staged.items():
            if name not in renamed:
                path.unlink(missing_ok=True)
        raise ReportWriteError(
            f"cannot finish the report in {folder}: {exc.strerror or exc}; "
            f"only {', '.join(renamed) or 'no file'} replaced"
        ) from exc
    return list(staged), why_not, removed
