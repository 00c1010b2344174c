"""Every case of ``strands-offload bench``, as pytest-benchmark groups (``reference`` vs ``native``).

The cases live in the package (``strands_offload.bench.cases``) so the command and these benches
measure the same thing. Inputs up to 1 MB by default; ``STRANDS_OFFLOAD_BENCH_FULL=1`` adds 10 MB.

Run: ``pytest benches/bench_cases.py --benchmark-group-by=group``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from strands_offload.bench.cases import Case, CaseUnavailable, Thunk, all_cases

CASES = all_cases(quick=os.environ.get("STRANDS_OFFLOAD_BENCH_FULL") != "1")
_PREPARED: dict[str, tuple[Thunk, Thunk]] = {}


def _prepared(case: Case, request: pytest.FixtureRequest) -> tuple[Thunk, Thunk]:
    if case.group not in _PREPARED:
        if "tiktoken" in case.group:
            request.getfixturevalue("tiktoken_offline")  # fills the offline rank-file cache once
        try:
            _PREPARED[case.group] = case.prepare()
        except CaseUnavailable as why:
            pytest.skip(str(why))
    return _PREPARED[case.group]


@pytest.mark.parametrize("member", ["reference", "native"])
@pytest.mark.parametrize("case", CASES, ids=[case.group.replace(" ", "_") for case in CASES])
def test_case(benchmark: Any, case: Case, member: str, request: pytest.FixtureRequest) -> None:
    benchmark.group = case.group
    benchmark.extra_info["member"] = member
    reference, ours = _prepared(case, request)
    benchmark(reference if member == "reference" else ours)
