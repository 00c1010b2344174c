"""Pytest fixtures for S3 over real HTTP, shared by the storage and offloader test folders.

Import with ``from _s3_fixtures import *`` in a conftest (after putting ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _s3_support import (
    EndpointSession,
    FaultProxy,
    endpoint_of,
    new_bucket,
    start_moto,
    stop_moto,
)

__all__ = ["fault_proxy", "s3_bucket", "s3_endpoint", "s3_session"]


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of a moto S3 server shared by the whole run."""
    server = start_moto()
    yield endpoint_of(server)
    stop_moto(server)


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    """A fresh, empty bucket on the shared server."""
    return new_bucket(s3_endpoint)


@pytest.fixture
def s3_session(s3_endpoint: str) -> EndpointSession:
    """A boto3-compatible session whose S3 clients talk to the shared server."""
    return EndpointSession(s3_endpoint)


@pytest.fixture
def fault_proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    """A fault-injecting proxy in front of the shared server."""
    proxy = FaultProxy(s3_endpoint)
    yield proxy
    proxy.close()
