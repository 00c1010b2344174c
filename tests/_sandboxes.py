"""A recording in-memory sandbox for testing storage that routes I/O through a strands Sandbox."""

from __future__ import annotations

import posixpath
from collections.abc import AsyncGenerator
from typing import Any

from strands.sandbox.base import Sandbox
from strands.sandbox.errors import SandboxPathNotFoundError
from strands.sandbox.types import ExecutionResult, FileInfo, StreamChunk


class MemorySandbox(Sandbox):
    """Files in a dict keyed by normalised path; every file call is recorded in ``calls``."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []

    @staticmethod
    def _norm(path: str) -> str:
        return posixpath.normpath(path)

    async def execute_streaming(
        self, command: str, **kwargs: Any
    ) -> AsyncGenerator[StreamChunk | ExecutionResult, None]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def execute_code_streaming(
        self, code: str, language: str, **kwargs: Any
    ) -> AsyncGenerator[StreamChunk | ExecutionResult, None]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def read_file(self, path: str, **kwargs: Any) -> bytes:
        self.calls.append(("read_file", path))
        try:
            return self.files[self._norm(path)]
        except KeyError:
            raise FileNotFoundError(path) from None

    async def write_file(self, path: str, content: bytes, **kwargs: Any) -> None:
        self.calls.append(("write_file", path))
        self.files[self._norm(path)] = bytes(content)

    async def remove_file(self, path: str, **kwargs: Any) -> None:
        self.calls.append(("remove_file", path))
        try:
            del self.files[self._norm(path)]
        except KeyError:
            raise FileNotFoundError(path) from None

    async def list_files(self, path: str, **kwargs: Any) -> list[FileInfo]:
        self.calls.append(("list_files", path))
        base = self._norm(path)
        entries: dict[str, bool] = {}
        for name in self.files:
            if base != "." and not name.startswith(base + "/"):
                continue
            rest = name if base == "." else name[len(base) + 1 :]
            head, _, tail = rest.partition("/")
            entries[head] = entries.get(head, False) or bool(tail)
        if not entries:
            raise SandboxPathNotFoundError(path)
        return [FileInfo(name=name, is_dir=is_dir) for name, is_dir in sorted(entries.items())]
