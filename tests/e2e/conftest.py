"""Fixtures of the end-to-end tests: S3 over real HTTP on 127.0.0.1."""

from _s3_fixtures import *  # noqa: F403  (S3 server, bucket, session and fault-proxy fixtures)
