"""The built wheel works on its own: installed into a fresh venv, no network, no source tree.

``.ci/test-matrix`` builds the wheel (``.ci/build-wheel``) and hands its path over in
``STRANDS_OFFLOAD_WHEEL``. Without it the test skips locally; under CI (``CI=true``) a missing
wheel is a failure. The venv reaches this environment's packages (strands-agents and the other
dependencies) through a ``.pth`` file, so ``pip install --no-index`` resolves them without an index.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

_RETRIEVAL = r"""
import asyncio, json, sys
from pathlib import Path

import strands_offload
from strands_offload import ContextOffloader, count_tokens, json_query
from strands_offload.demo.scenario import make_service_log, run_log_triage
from strands_offload.storage import InMemoryStorage

here = Path(strands_offload.__file__).resolve()
assert Path(sys.prefix).resolve() in here.parents, here
print("installed at", here.parent)

log = make_service_log(300_000)
run = run_log_triage(ContextOffloader(storage=InMemoryStorage()), log, pattern="ERROR")
texts = [
    part["text"]
    for message in run.messages
    for block in message["content"]
    if "toolResult" in block
    for part in block["toolResult"]["content"]
    if "text" in part
]
notice, grep = texts[:2]
assert len(notice) < len(log) // 10 and "ERROR" in grep, (notice[:200], grep[:200])

import strands.storage as reference

# Letters of Unicode 14.0 and 15.0 are words only on the Pythons that know them, as in the reference.
keys = []
for storage in (InMemoryStorage(), reference.InMemoryStorage()):
    asyncio.run(storage.write("notes/\U0001e290 toto.md", "kawi \U00011f04 letter".encode()))
    asyncio.run(storage.write("other.md", "\U00011f04\U00011f05".encode()))
    keys.append([hit.key for hit in asyncio.run(storage.search("kawi \U0001e290 \U00011f04\U00011f05"))])
assert keys[0] == keys[1] and keys[0][0] == "notes/\U0001e290 toto.md", keys

assert json_query(json.dumps({"a": [1, 2]}).encode(), "$.a[1]").startswith("[1 match for $.a[1]]")
assert count_tokens("hello world", "o200k_base") == 2
print("retrieval ok")
"""


def _wheel() -> Path:
    value = os.environ.get("STRANDS_OFFLOAD_WHEEL")
    if not value:
        if os.environ.get("CI") == "true":
            pytest.fail("STRANDS_OFFLOAD_WHEEL is not set: CI must test the built wheel")
        pytest.skip("STRANDS_OFFLOAD_WHEEL is not set (build one with: bash .ci/build-wheel DIR)")
    wheel = Path(value)
    if not wheel.is_file():
        pytest.fail(f"STRANDS_OFFLOAD_WHEEL={value} is not a file")
    return wheel


def _clean_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1", HOME=str(home))
    return env


def test_wheel_installs_offline_and_runs_demo_and_retrieval(tmp_path: Path) -> None:
    wheel = _wheel()
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # This environment's packages (dependencies), after the venv's own: the wheel's copy wins.
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_test_env_packages.pth").write_text("\n".join(sorted(ours)) + "\n")
    work = tmp_path / "elsewhere"  # no source tree in the working directory
    work.mkdir()
    env = _clean_env(tmp_path)

    # The wheel goes into the venv even when this environment has strands-offload installed too
    # (as the multi-version run has); its dependencies come from this environment (the .pth file).
    pip = [python, "-m", "pip"]
    install = subprocess.run(
        [*pip, "install", "--no-index", "--force-reinstall", "--no-deps", str(wheel)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert list(Path(purelib).glob("strands_offload-*.dist-info")), install.stdout

    demo = subprocess.run(
        [target / "bin" / "strands-offload", "demo", "--repeats", "1", "--size-mb", "1"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "retrieve_offloaded_content" in demo.stdout

    retrieval = subprocess.run(
        [python, "-c", _RETRIEVAL], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert retrieval.returncode == 0, retrieval.stdout + retrieval.stderr
    assert "retrieval ok" in retrieval.stdout
    assert sys.prefix not in retrieval.stdout.split("installed at", 1)[1].split("\n", 1)[0]
