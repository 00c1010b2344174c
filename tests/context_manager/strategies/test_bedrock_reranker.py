"""``BedrockReranker`` against a real ``bedrock-agent-runtime`` client whose responses are stubbed.

botocore's ``Stubber`` checks each request against the service model (shapes, bounds) and answers
with the response or error it is given; unreachable endpoints and timeouts go over real sockets
on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from strands_offload.context_manager import BedrockReranker, Reranker, RerankerError

_REGION = "eu-west-3"
_ARN = f"arn:aws:bedrock:{_REGION}::foundation-model/amazon.rerank-v1:0"


def _session(region: str = _REGION) -> boto3.Session:
    return boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name=region)


def _request(query: str, texts: list[str], arn: str = _ARN) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}}} for t in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {"modelConfiguration": {"modelArn": arn}, "numberOfResults": len(texts)},
        },
    }


def _answer(scores: dict[int, float]) -> dict[str, Any]:
    # The service lists results best first, not by index.
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    return {"results": [{"index": index, "relevanceScore": score} for index, score in ranked]}


def test_it_is_a_reranker_with_the_foundation_model_arn_of_the_region() -> None:
    reranker = BedrockReranker(boto_session=_session())
    assert isinstance(reranker, Reranker)
    assert reranker.model_arn == _ARN and reranker.max_sources_per_query == 100
    assert BedrockReranker("cohere.rerank-v3-5:0", boto_session=_session("us-west-2")).model_arn == (
        "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
    )
    arn = "arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc"
    assert BedrockReranker(arn, boto_session=_session()).model_arn == arn
    assert BedrockReranker(boto_session=_session(), region_name="ca-central-1").model_arn.startswith(
        "arn:aws:bedrock:ca-central-1::"
    )


def test_timeouts_are_ten_seconds_unless_the_caller_sets_them() -> None:
    config = BedrockReranker(boto_session=_session()).client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (10, 10)
    mine = BedrockReranker(
        boto_session=_session(), boto_client_config=Config(read_timeout=3, retries={"max_attempts": 1})
    )
    assert (mine.client.meta.config.connect_timeout, mine.client.meta.config.read_timeout) == (10, 3)


def test_scores_are_mapped_back_to_their_chunks_in_batches_of_100() -> None:
    reranker = BedrockReranker(boto_session=_session())
    texts = [f"chunk {i}" for i in range(250)]
    with Stubber(reranker.client) as stub:
        stub.add_response("rerank", _answer({i: i / 1000 for i in range(100)}), _request("q", texts[:100]))
        stub.add_response("rerank", _answer({i: 0.5 for i in range(100)}), _request("q", texts[100:200]))
        # The last batch: the model ranks only two of its 50 chunks.
        stub.add_response("rerank", _answer({3: 0.9, 0: 0.25}), _request("q", texts[200:]))
        scores = asyncio.run(reranker.score("q", texts))
        stub.assert_no_pending_responses()
    assert scores[:100] == [i / 1000 for i in range(100)]
    assert scores[100:200] == [0.5] * 100
    assert scores[200] == 0.25 and scores[203] == 0.9
    assert scores[201] == scores[202] == 0.0 and scores[204:] == [0.0] * 46


def test_no_chunk_makes_no_request() -> None:
    reranker = BedrockReranker(boto_session=_session())
    with Stubber(reranker.client):
        assert asyncio.run(reranker.score("q", [])) == []


@pytest.mark.parametrize(
    "code",
    [
        "AccessDeniedException",
        "ThrottlingException",
        "ValidationException",
        "ResourceNotFoundException",
        "ServiceQuotaExceededException",
        "InternalServerException",
        "DependencyFailedException",
        "BadGatewayException",
        "ConflictException",
        "ExpiredTokenException",
    ],
)
def test_every_service_error_is_a_reranker_error(code: str) -> None:
    reranker = BedrockReranker(boto_session=_session())
    with Stubber(reranker.client) as stub:
        stub.add_client_error("rerank", service_error_code=code, http_status_code=400)
        with pytest.raises(RerankerError, match=code) as error:
            asyncio.run(reranker.score("q", ["a"]))
    assert type(error.value.__cause__).__name__ in {code, "ClientError"}


@pytest.mark.parametrize(
    "answer",
    [
        {"results": [{"index": 1, "relevanceScore": 0.5}]},  # no chunk 1 was sent
        {"results": [{"index": 0, "relevanceScore": 0.5}, {"index": 0, "relevanceScore": 0.4}]},  # twice
    ],
    ids=["index-out-of-range", "index-twice"],
)
def test_an_answer_naming_chunks_not_sent_is_a_reranker_error(answer: dict[str, Any]) -> None:
    reranker = BedrockReranker(boto_session=_session())
    with Stubber(reranker.client) as stub:
        stub.add_response("rerank", answer, _request("q", ["a"]))
        with pytest.raises(RerankerError, match="chunk"):
            asyncio.run(reranker.score("q", ["a"]))


def test_a_request_the_service_model_refuses_is_a_reranker_error() -> None:
    # An empty chunk (the API's minimum is 1 character): the client's parameter validation refuses it.
    reranker = BedrockReranker(boto_session=_session())
    with Stubber(reranker.client) as stub, pytest.raises(RerankerError, match="ParamValidationError"):
        stub.add_response("rerank", _answer({0: 1.0}))  # never sent: the request fails validation first
        asyncio.run(reranker.score("q", ["a", ""]))


def test_an_empty_query_is_a_reranker_error() -> None:
    reranker = BedrockReranker(boto_session=_session())
    with Stubber(reranker.client), pytest.raises(RerankerError, match="empty"):
        asyncio.run(reranker.score(" \n", ["a"]))


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_a_read_timeout_is_a_reranker_error(silent_server: int) -> None:
    config = Config(read_timeout=0.3, retries={"max_attempts": 1})
    reranker = BedrockReranker(boto_session=_session(), boto_client_config=config)
    reranker._client = _session().client(
        "bedrock-agent-runtime",
        endpoint_url=f"http://127.0.0.1:{silent_server}",
        config=reranker.client.meta.config,
    )
    with pytest.raises(RerankerError, match="ReadTimeoutError"):
        asyncio.run(reranker.score("q", ["a"]))


def test_an_unreachable_endpoint_is_a_reranker_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    config = Config(connect_timeout=0.3, retries={"max_attempts": 1})
    reranker = BedrockReranker(boto_session=_session(), boto_client_config=config)
    reranker._client = _session().client(
        "bedrock-agent-runtime", endpoint_url=f"http://127.0.0.1:{port}", config=reranker.client.meta.config
    )
    with pytest.raises(RerankerError, match="EndpointConnectionError"):
        asyncio.run(reranker.score("q", ["a"]))
