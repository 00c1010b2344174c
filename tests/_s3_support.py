"""S3 over real HTTP for the storage tests: a moto server, a fault-injecting proxy, boto3 plumbing,
and session managers on files or on S3 (with an Agent on one) for tests parametrized over both.

Nothing here patches boto3: clients talk HTTP to 127.0.0.1, either straight to moto's standalone
server or through :class:`FaultProxy`, which forwards requests and can answer 5xx, drop
connections, or go away entirely.
"""

from __future__ import annotations

import http.client
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from moto.server import ThreadedMotoServer
from strands import Agent
from strands.session.file_session_manager import FileSessionManager
from strands.session.s3_session_manager import S3SessionManager

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}


def start_moto() -> ThreadedMotoServer:
    """Start moto's standalone server on a free port of 127.0.0.1."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    return server


def stop_moto(server: ThreadedMotoServer) -> None:
    """Stop the server and close its listening socket (so clients get refused, not stuck)."""
    inner = server._server
    server.stop()
    if inner is not None:
        inner.server_close()


def endpoint_of(server: ThreadedMotoServer) -> str:
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}"


def fast_config(**extra: Any) -> Config:
    """A client config whose retries and timeouts keep fault tests to a few seconds."""
    settings: dict[str, Any] = {
        "retries": {"total_max_attempts": 3, "mode": "standard"},
        "connect_timeout": 1,
        "read_timeout": 5,
    }
    settings.update(extra)
    return Config(**settings)


class EndpointSession:
    """A boto3 session whose clients go to a fixed endpoint with dummy credentials.

    The storage classes only call ``session.client("s3", config=...)``; this forwards that call
    with ``endpoint_url`` added, which is how a user points them at an S3-compatible server.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._session = boto3.Session(
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION
        )

    def client(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("endpoint_url", self.endpoint)
        return self._session.client(*args, **kwargs)


def new_bucket(endpoint: str) -> str:
    """Create a bucket with a unique name and return the name."""
    name = f"t-{uuid.uuid4().hex[:20]}"
    EndpointSession(endpoint).client("s3").create_bucket(Bucket=name)
    return name


class FaultProxy:
    """An HTTP proxy between boto3 and moto that can inject faults.

    Requests pass through unless faults are queued: ``fail(n, status)`` answers the next ``n``
    requests with an S3-style error, ``drop(n)`` closes the connection on the next ``n`` requests
    without answering, and ``kill()`` closes the listener and every open connection.
    """

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self._upstream = (host, int(port))
        self._faults: deque[tuple[str, int]] = deque()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self.dead = False
        self.requests = 0
        self.faults_served = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with proxy._lock:
                    proxy._sockets.add(self.connection)

            def finish(self) -> None:
                with proxy._lock:
                    proxy._sockets.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _relay(self) -> None:
                body = self._read_body()
                action = proxy._next_action()
                if action[0] == "drop":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if action[0] == "fail":
                    status = action[1]
                    payload = (
                        "<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                        + ("SlowDown" if status == 503 else "InternalError")
                        + "</Code><Message>injected fault</Message></Error>"
                    ).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                upstream = http.client.HTTPConnection(*proxy._upstream, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                    if body is not None:
                        headers["Content-Length"] = str(len(body))
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                    self.send_response(response.status, response.reason)
                    for key, value in response.getheaders():
                        if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    upstream.close()

            def _read_body(self) -> bytes | None:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(parts)
                length = self.headers.get("Content-Length")
                if length is None:
                    return None
                return self.rfile.read(int(length))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fail(self, count: int = 1, status: int = 503) -> None:
        with self._lock:
            self._faults.extend([("fail", status)] * count)

    def drop(self, count: int = 1) -> None:
        with self._lock:
            self._faults.extend([("drop", 0)] * count)

    def _next_action(self) -> tuple[str, int]:
        with self._lock:
            self.requests += 1
            if self.dead:
                return ("drop", 0)
            if self._faults:
                self.faults_served += 1
                return self._faults.popleft()
        return ("pass", 0)

    def kill(self) -> None:
        """Go away: refuse new connections and cut the open ones."""
        with self._lock:
            self.dead = True
            open_sockets = list(self._sockets)
        self._server.shutdown()
        self._server.server_close()
        for sock in open_sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if not self.dead:
            self.kill()


def session_managers(request: Any, tmp_path: Path) -> Callable[[str], Any]:
    """Makes session managers of the kind ``request.param`` names ("file" or "s3") for a session id.

    For a fixture parametrized over the two kinds: "file" writes under ``tmp_path``; "s3" uses the
    ``s3_bucket`` and ``s3_endpoint`` fixtures (each call a fresh manager).
    """
    if request.param == "file":
        return lambda session_id: FileSessionManager(session_id=session_id, storage_dir=str(tmp_path / "sessions"))
    bucket = request.getfixturevalue("s3_bucket")
    endpoint = request.getfixturevalue("s3_endpoint")
    boto = boto3.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION)
    return lambda session_id: S3SessionManager(session_id, bucket, boto_session=boto, endpoint_url=endpoint)


def session_agent(model: Any, tools: list[Any], manager: Any, session: Any, **kwargs: Any) -> Agent:
    """An Agent with id "main" on ``session`` and no callback handler (``kwargs`` go to ``Agent``)."""
    return Agent(
        model=model,
        tools=tools,
        context_manager=manager,
        session_manager=session,
        agent_id="main",
        callback_handler=None,
        **kwargs,
    )
