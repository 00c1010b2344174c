"""Fixtures of the storage tests: an S3-protocol server on 127.0.0.1 and boto3 sessions for it."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _s3_fixtures import *  # noqa: E402,F403  (S3 server, bucket, session and fault-proxy fixtures)
