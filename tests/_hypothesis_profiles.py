"""The two hypothesis profiles of the test suite, registered and loaded by ``conftest.py``.

``deterministic`` (loaded unless ``--hypothesis-profile`` names another) gives one verdict per
tree: seeds derived from each test's source, no example database, no deadline, each test's own
``max_examples``. ``fuzz`` explores: random seeds, the example database under ``.hypothesis/``,
and at least ``FUZZ_EXAMPLES`` examples per test. ``emulated`` (the arm64 leg under qemu, where
every example costs several times more) is ``deterministic`` with at most ``EMULATED_EXAMPLES``
examples per test: the same draws, fewer of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

DETERMINISTIC_PROFILE = "deterministic"
FUZZ_PROFILE = "fuzz"
FUZZ_EXAMPLES = 2000
EMULATED_PROFILE = "emulated"
EMULATED_EXAMPLES = 10

_DATABASE = Path(__file__).resolve().parent.parent / ".hypothesis" / "examples"


def register_profiles() -> None:
    """Register both profiles (re-registering gives equal ones)."""
    # Parented on hypothesis' own "default" profile, not on the active one: hypothesis loads its
    # "ci" profile by itself when it detects CI, and the test command must not depend on that.
    base = settings.get_profile("default")
    settings.register_profile(
        DETERMINISTIC_PROFILE,
        base,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        # The one health check that depends on the machine's speed; the others follow the draws.
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        EMULATED_PROFILE, settings.get_profile(DETERMINISTIC_PROFILE), max_examples=EMULATED_EXAMPLES
    )
    settings.register_profile(
        FUZZ_PROFILE,
        base,
        max_examples=FUZZ_EXAMPLES,
        derandomize=False,
        database=DirectoryBasedExampleDatabase(_DATABASE),
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )


def active_profile() -> str:
    """The loaded profile, without the suffix of the variants hypothesis derives from it.

    ``--hypothesis-verbosity`` and ``--hypothesis-explain`` load "<profile>-with-...".
    """
    return settings.get_current_profile_name().split("-with-")[0]


def cap_example_budget(test: Any, ceiling: int) -> bool:
    """Give the hypothesis test ``test`` at most ``ceiling`` examples; return whether it is one.

    The counterpart of :func:`raise_example_budget`, for the ``emulated`` profile.
    """
    function = getattr(test, "__func__", test)
    if not getattr(function, "is_hypothesis_test", False):
        return False
    own: settings = function._hypothesis_internal_use_settings
    if own.max_examples > ceiling:
        function._hypothesis_internal_use_settings = settings(own, max_examples=ceiling)
    return True


def raise_example_budget(test: Any, floor: int) -> bool:
    """Give the hypothesis test ``test`` at least ``floor`` examples; return whether it is one.

    A test's explicit ``@settings(max_examples=N)`` beats any profile, so the fuzz profile alone
    would not run more examples. Hypothesis reads the settings it keeps on the wrapped test each
    time the test runs; replacing them with a child that only raises ``max_examples`` keeps the rest.
    """
    function = getattr(test, "__func__", test)
    if not getattr(function, "is_hypothesis_test", False):
        return False
    own: settings = function._hypothesis_internal_use_settings
    if own.max_examples < floor:
        function._hypothesis_internal_use_settings = settings(own, max_examples=floor)
    return True
