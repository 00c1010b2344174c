"""A separate process that keeps swapping entries for symlinks, for containment tests under races.

``flipping(specs, seconds)`` starts it and yields the ``subprocess.Popen``; the caller works on
the storage while ``process.poll() is None``. Each spec is ``(kind, path, target)``:

* ``"file"``: ``path`` alternates atomically (rename) between a regular file holding ``b"inside"``
  and a symlink to ``target``;
* ``"dir"``: the directory at ``path`` is moved aside, a symlink to ``target`` takes its place, then
  the directory comes back (if a writer recreated ``path`` meanwhile, the moved one stays aside).

Helper names (``.flip-*``) are created next to ``path``, inside the storage directory.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_SCRIPT = r"""
import os, random, sys, time

seconds = float(sys.argv[1])
pauses = (0.0, 0.0, 0.0002, 0.001)  # mostly tight flips, sometimes a state that lasts
specs = [sys.argv[i:i + 3] for i in range(2, len(sys.argv), 3)]
print("ready", flush=True)
deadline = time.monotonic() + seconds
n = 0
while time.monotonic() < deadline:
    n += 1
    for kind, path, target in specs:
        head, name = os.path.split(path)
        link = os.path.join(head, f".flip-link-{n}-{name}")
        os.symlink(target, link)
        if kind == "file":
            os.rename(link, path)
            time.sleep(random.choice(pauses))
            real = os.path.join(head, f".flip-real-{n}-{name}")
            with open(real, "wb") as handle:
                handle.write(b"inside")
            os.rename(real, path)
            continue
        parked = os.path.join(head, f".flip-parked-{n}-{name}")
        try:
            os.rename(path, parked)
        except OSError:
            parked = None
        try:
            os.rename(link, path)
        except OSError:
            os.unlink(link)
        time.sleep(random.choice(pauses))
        if os.path.islink(path):
            os.unlink(path)
        if parked is not None:
            try:
                os.rename(parked, path)
            except OSError:
                pass
    time.sleep(random.choice(pauses))
print(n, flush=True)
"""


@contextmanager
def flipping(specs: Sequence[tuple[str, Path, Path]], seconds: float) -> Iterator[subprocess.Popen[bytes]]:
    """Run the flipper for ``seconds`` (after it reports ready); wait for it and check it flipped."""
    arguments = [str(part) for spec in specs for part in spec]
    process = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(seconds), *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        assert process.stdout.readline().strip() == b"ready"
        yield process
        out, err = process.communicate(timeout=seconds + 30)
        assert process.returncode == 0, err.decode()
        assert int(out) > 10, "the flipper barely ran"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
