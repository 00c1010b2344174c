"""What the parents of the process benches share (``tool_call_pairs.py``, ``hook_dump_pairs.py``,
``json_shape_processes.py``): the command line's frame, the shape documents on disk for the
children, and the ``--json`` file of figures.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from json_shapes import TARGET, build_shape


def parse_args(
    doc: str, argv: list[str] | None, options: Callable[[argparse.ArgumentParser], None]
) -> argparse.Namespace:
    """Parse ``argv`` with the bench's own ``options``, then ``--json``; described by ``doc``'s first line."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    options(parser)
    parser.add_argument("--json", help="write the figures here")
    return parser.parse_args(argv)


@contextmanager
def shape_files(shapes: Iterable[str]) -> Iterator[dict[str, str]]:
    """Write each shape's compact text to a temporary file; yield the paths by shape, delete the files after.

    Every text must be within 5% of the shapes' target size.
    """
    paths: dict[str, str] = {}
    try:
        for shape in shapes:
            text = json.dumps(build_shape(shape))
            assert abs(len(text) - TARGET) <= TARGET * 0.05, f"{shape}: {len(text):,} bytes"
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
                f.write(text)
                paths[shape] = f.name
        yield paths
    finally:
        for path in paths.values():
            os.unlink(path)


def write_figures(path: str | None, summary: Any) -> None:
    """Write ``summary`` as indented JSON to ``path`` (the ``--json`` option), if one was given."""
    if path:
        Path(path).write_text(json.dumps(summary, indent=2))
