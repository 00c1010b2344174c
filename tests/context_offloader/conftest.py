"""Fixtures of the storage tests: an S3-protocol server on 127.0.0.1 and boto3 sessions for it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _s3_support import (  # noqa: E402
    EndpointSession,
    FaultProxy,
    endpoint_of,
    new_bucket,
    start_moto,
    stop_moto,
)


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
