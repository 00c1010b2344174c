"""Small model stand-ins shared by tests that only count tokens."""

from __future__ import annotations

from typing import Any

from strands.models.model import Model


class HeuristicModel(Model):
    """A model that keeps the SDK's base ``count_tokens`` and never streams."""

    def update_config(self, **kwargs: Any) -> None: ...

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError
