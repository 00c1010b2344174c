"""Fixtures of the offloader tests (S3 over real HTTP for the legacy S3Storage)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _s3_fixtures import *  # noqa: E402,F403  (S3 server, bucket, session and fault-proxy fixtures)
