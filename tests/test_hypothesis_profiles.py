"""The suite's hypothesis profiles: deterministic unless the command line asks for ``fuzz``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _hypothesis_profiles import (
    DETERMINISTIC_PROFILE,
    EMULATED_EXAMPLES,
    EMULATED_PROFILE,
    FUZZ_EXAMPLES,
    FUZZ_PROFILE,
    active_profile,
    cap_example_budget,
    raise_example_budget,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = Path(__file__).resolve().parents[1]


def test_profiles_are_as_documented() -> None:
    deterministic = settings.get_profile(DETERMINISTIC_PROFILE)
    assert (deterministic.derandomize, deterministic.database, deterministic.deadline) == (True, None, None)
    fuzz = settings.get_profile(FUZZ_PROFILE)
    assert not fuzz.derandomize and isinstance(fuzz.database, DirectoryBasedExampleDatabase)
    assert fuzz.max_examples == FUZZ_EXAMPLES == 2000


def test_emulated_profile_is_deterministic_with_fewer_examples() -> None:
    emulated = settings.get_profile(EMULATED_PROFILE)
    assert (emulated.derandomize, emulated.database, emulated.deadline) == (True, None, None)
    assert emulated.max_examples == EMULATED_EXAMPLES == 10


def test_example_cap_lowers_a_tests_own_budget_and_leaves_smaller_ones() -> None:
    @settings(max_examples=300)
    @given(st.integers())
    def many(number: int) -> None:
        pass

    @settings(max_examples=4)
    @given(st.integers())
    def few(number: int) -> None:
        pass

    assert cap_example_budget(many, 10) and cap_example_budget(few, 10)
    assert many._hypothesis_internal_use_settings.max_examples == 10  # type: ignore[attr-defined]
    assert few._hypothesis_internal_use_settings.max_examples == 4  # type: ignore[attr-defined]
    assert not cap_example_budget(lambda: None, 10)


def test_active_profile_is_the_command_lines_or_deterministic(request: pytest.FixtureRequest) -> None:
    assert active_profile() == (request.config.getoption("--hypothesis-profile") or DETERMINISTIC_PROFILE)


@settings(max_examples=7)
@given(st.integers())
def test_property_tests_run_under_the_active_profile(number: int) -> None:
    # While a property test runs, settings.default is the settings it runs with.
    effective = settings.default
    if active_profile() == FUZZ_PROFILE:
        assert (effective.derandomize, effective.max_examples) == (False, FUZZ_EXAMPLES)
    else:
        assert (effective.derandomize, effective.database, effective.max_examples) == (True, None, 7)


def _draws(profile: str) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []

    @settings(settings.get_profile(profile), max_examples=25, database=None)
    @given(st.text(), st.integers())
    def record(text: str, number: int) -> None:
        seen.append((text, number))

    record()
    return seen


def test_deterministic_profile_draws_the_same_examples_every_run() -> None:
    first = _draws(DETERMINISTIC_PROFILE)
    assert first == _draws(DETERMINISTIC_PROFILE)
    assert len(first) == 25 and len(set(first)) > 1


def test_fuzz_profile_draws_new_examples_every_run() -> None:
    assert _draws(FUZZ_PROFILE) != _draws(FUZZ_PROFILE)


def test_example_budget_is_raised_never_lowered() -> None:
    calls: list[int] = []

    @settings(max_examples=5)
    @given(st.integers())
    def small(number: int) -> None:
        calls.append(number)

    assert raise_example_budget(small, 40)
    small()
    assert len(calls) == 40
    calls.clear()
    assert raise_example_budget(small, 10)
    small()
    assert len(calls) == 40
    assert not raise_example_budget(test_profiles_are_as_documented, 40)


def test_command_line_profile_wins_over_the_conftest_default() -> None:
    # conftest loads "deterministic" first; hypothesis' plugin must then load the named profile.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"{Path(__file__).relative_to(ROOT)}",
            "--hypothesis-profile=fuzz",
            "-k",
            "active_profile or run_under_the_active_profile",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
