"""The native module was built with the code paths this machine should run.

A build for x86_64 or aarch64 carries that architecture's vector fast paths; a build with
``RUSTFLAGS="--cfg strands_offload_portable"`` (CI's portable leg, which sets
``STRANDS_OFFLOAD_EXPECT_FAST_PATHS=portable``) carries only their portable twins. The JSON
writer's layout probe, which does not depend on the instruction set, is checked by
``test_json_dumps.py`` on every build.
"""

from __future__ import annotations

import os
import platform

from strands_offload import _native

_NATIVE_PATHS = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def test_fast_paths_follow_the_architecture_or_the_portable_setting() -> None:
    expected = os.environ.get("STRANDS_OFFLOAD_EXPECT_FAST_PATHS") or _NATIVE_PATHS.get(
        platform.machine().lower(), "portable"
    )
    assert _native._fast_paths() == expected
