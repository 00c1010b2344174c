"""Fixtures for the context manager tests: the implementation under test."""

from __future__ import annotations

import pytest
from _cm_harness import IMPL_PARAMS, Impl


@pytest.fixture(params=IMPL_PARAMS, scope="session")
def impl(request: pytest.FixtureRequest) -> Impl:
    """The implementation under test: the reference (a harness self-check in differential tests) or ours."""
    return request.param  # type: ignore[no-any-return]
