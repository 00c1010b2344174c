"""Shared test fixtures.

``tiktoken_offline`` makes the ``tiktoken`` package usable without internet access.
tiktoken looks up its rank files in ``TIKTOKEN_CACHE_DIR`` under the SHA-1 of their
download URL and checks their SHA-256. The ``litellm`` wheel on PyPI ships the two
files we need, so the fixture downloads that wheel once with pip (package registry
only; litellm is never installed), copies the two files into a cache directory kept
between runs, and points ``TIKTOKEN_CACHE_DIR`` at it for the test session.

Hypothesis runs under one of two profiles (defined in ``_hypothesis_profiles.py``, registered
here). ``deterministic`` is loaded unless ``--hypothesis-profile`` names another: seeds derived
from each test, no example database, no deadline, each test's own ``max_examples``, so one tree
always gives one verdict. ``fuzz`` explores (``python -m pytest tests --hypothesis-profile=fuzz``):
random seeds, the example database under ``.hypothesis/``, at least 2000 examples per test.
``emulated`` (``.ci/test-arm64``, under qemu) keeps the deterministic draws, at most 10 per test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _hypothesis_profiles import (
    DETERMINISTIC_PROFILE,
    EMULATED_PROFILE,
    FUZZ_PROFILE,
    active_profile,
    cap_example_budget,
    raise_example_budget,
    register_profiles,
)
from hypothesis import settings

# tiktoken's cache key (SHA-1 of the download URL) and the expected SHA-256 of each file.
TIKTOKEN_FILES: dict[str, tuple[str, str, str]] = {
    "cl100k_base": (
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "cl100k_base.tiktoken",
    ),
    "o200k_base": (
        "fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "o200k_base.tiktoken",
    ),
}

_WHEEL_DIR = "litellm/litellm_core_utils/tokenizers/"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "strands-offload-tiktoken"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cache_complete(cache: Path) -> bool:
    for key, sha, _ in TIKTOKEN_FILES.values():
        path = cache / key
        if not path.is_file() or _sha256(path) != sha:
            return False
    return True


def _fill_cache(cache: Path) -> None:
    """Download the litellm wheel and copy the two rank files into ``cache``."""
    with tempfile.TemporaryDirectory(prefix="litellm-wheel-") as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                tmp,
                "litellm",
            ],
            check=True,
        )
        wheels = sorted(Path(tmp).glob("litellm-*.whl"))
        if not wheels:
            raise RuntimeError("pip download produced no litellm wheel")
        cache.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[-1]) as wheel:
            names = [n for n in wheel.namelist() if n.startswith(_WHEEL_DIR)]
            for key, sha, file_name in TIKTOKEN_FILES.values():
                # The wheel names the files by their cache key; accept the plain name too.
                member = next((n for n in names if n.endswith(("/" + key, "/" + file_name))), None)
                if member is None:
                    raise RuntimeError(f"{file_name} not found in {wheels[-1].name}")
                target = cache / key
                partial = cache / (key + ".partial")
                with wheel.open(member) as src, partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                if _sha256(partial) != sha:
                    partial.unlink()
                    raise RuntimeError(f"{file_name} from {wheels[-1].name} has an unexpected SHA-256")
                partial.replace(target)


@pytest.fixture(scope="session")
def tiktoken_offline() -> Iterator[Any]:
    """The ``tiktoken`` module, able to load cl100k_base and o200k_base offline.

    Skips the requesting test when tiktoken is not installed. The environment variable is
    restored when the session ends.
    """
    tiktoken = pytest.importorskip("tiktoken")
    cache = _cache_root()
    if not _cache_complete(cache):
        _fill_cache(cache)
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield tiktoken
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def tiktoken_encodings(tiktoken_offline: Any) -> dict[str, Any]:
    """Loaded tiktoken ``Encoding`` objects by name (cl100k_base, o200k_base)."""
    return {name: tiktoken_offline.get_encoding(name) for name in TIKTOKEN_FILES}


# ---------------------------------------------------------------------------- hypothesis profiles

register_profiles()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Load the deterministic profile unless ``--hypothesis-profile`` chose one.

    Runs before hypothesis' own ``pytest_configure``, which loads the profile named on the command
    line (and derives its verbosity variants from the active one), so the command line wins.
    Test modules are imported after this, so their ``@settings`` inherit the loaded profile.
    """
    if not config.getoption("--hypothesis-profile", default=None):
        settings.load_profile(DETERMINISTIC_PROFILE)


def pytest_report_header(config: pytest.Config) -> str:
    """Say which native code paths this run tests: the vector fast paths, the JSON in-place reads."""
    import platform

    from strands_offload import _native

    return (
        f"strands_offload native: {platform.machine()}, fast paths {_native._fast_paths()}, "
        f"json str in place {_native._json_reads_str_in_place()}, "
        f"items in place {_native._json_reads_items_in_place()}"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fuzz: every property test runs at least the profile's examples; emulated: at most."""
    profile = active_profile()
    if profile not in (FUZZ_PROFILE, EMULATED_PROFILE):
        return
    budget = settings.default.max_examples
    adjust = raise_example_budget if profile == FUZZ_PROFILE else cap_example_budget
    for item in items:
        if isinstance(item, pytest.Function):
            adjust(item.obj, budget)


# S3 over real HTTP (a moto server on 127.0.0.1, one per run), for every test folder.
from _s3_fixtures import *  # noqa: E402,F403
