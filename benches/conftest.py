"""Bench fixtures: reuse the offline tiktoken fixture of the test suite."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_strands_offload_test_conftest", Path(__file__).resolve().parent.parent / "tests" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_tests_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tests_conftest)

tiktoken_offline = _tests_conftest.tiktoken_offline
tiktoken_encodings = _tests_conftest.tiktoken_encodings
