"""``BedrockReranker``: chunks scored by a Bedrock rerank model (the Agent Runtime ``Rerank`` API).

Opt-in, and it sends the tool output off the host: every chunk of every result it scores goes to
the Bedrock endpoint of the client's region, with the query (the user's last message and the tool
call's input). The default reranker of ``Offload.relevance`` is the native one, which does not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from .relevance import RerankerError

__all__ = ["BATCH_SIZE", "DEFAULT_MODEL_ID", "BedrockReranker"]

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "amazon.rerank-v1:0"
BATCH_SIZE = 100
"""Chunks per ``Rerank`` request."""
TIMEOUT_SECONDS = 10


class BedrockReranker:
    """Scores chunks with a Bedrock rerank model, in requests of 100 chunks.

    Args:
        model_id: A model id (made into the foundation-model ARN of the client's region) or an ARN.
        boto_session: The boto3 session to make the client from (default: a new one).
        boto_client_config: A botocore ``Config`` merged over ours (10 s connect and read timeouts).
        region_name: The region (default: the session's).
    """

    max_sources_per_query = BATCH_SIZE

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL_ID,
        *,
        boto_session: Any = None,
        boto_client_config: Any = None,
        region_name: str | None = None,
    ) -> None:
        import boto3  # type: ignore[import-untyped]
        from botocore.config import Config  # type: ignore[import-untyped]

        session = boto_session if boto_session is not None else boto3.Session(region_name=region_name)
        config = Config(connect_timeout=TIMEOUT_SECONDS, read_timeout=TIMEOUT_SECONDS)
        if boto_client_config is not None:
            config = config.merge(boto_client_config)
        self._client = session.client(
            "bedrock-agent-runtime", region_name=region_name or session.region_name, config=config
        )
        self.model_id = model_id
        if model_id.startswith("arn:"):
            self.model_arn = model_id
        else:
            meta = self._client.meta
            partition = getattr(meta, "partition", None) or "aws"
            self.model_arn = f"arn:{partition}:bedrock:{meta.region_name}::foundation-model/{model_id}"

    @property
    def client(self) -> Any:
        """The ``bedrock-agent-runtime`` client the requests go through."""
        return self._client

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per chunk, from the model; chunks it does not rank score 0.

        Raises:
            RerankerError: For an empty query, a failed request (refused, throttled, invalid,
                unreachable, timed out) or an answer that names chunks it was not sent.
        """
        if not query.strip():
            raise RerankerError("the query is empty")
        chunks = list(texts)
        scores = [0.0] * len(chunks)
        for start in range(0, len(chunks), BATCH_SIZE):
            batch = chunks[start : start + BATCH_SIZE]
            for index, value in await asyncio.to_thread(self._rerank, query, batch):
                scores[start + index] = value
        return scores

    def _rerank(self, query: str, batch: list[str]) -> list[tuple[int, float]]:
        """One ``Rerank`` request: (index in ``batch``, score) of every ranked chunk."""
        from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

        try:
            response = self._client.rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": query}}],
                sources=[
                    {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}}}
                    for text in batch
                ],
                rerankingConfiguration={
                    "type": "BEDROCK_RERANKING_MODEL",
                    "bedrockRerankingConfiguration": {
                        "modelConfiguration": {"modelArn": self.model_arn},
                        "numberOfResults": len(batch),
                    },
                },
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "Unknown")
            raise RerankerError(f"Bedrock rerank refused the request: {code}") from error
        except BotoCoreError as error:
            raise RerankerError(f"Bedrock rerank failed: {type(error).__name__}") from error
        return _ranked(response, len(batch))


def _ranked(response: Mapping[str, Any], count: int) -> list[tuple[int, float]]:
    """The (index, score) pairs of a ``Rerank`` response for ``count`` chunks, checked."""
    results = response.get("results")
    if not isinstance(results, list):
        raise RerankerError("Bedrock rerank answered without results")
    seen: set[int] = set()
    ranked: list[tuple[int, float]] = []
    for result in results:
        index = result.get("index") if isinstance(result, Mapping) else None
        value = result.get("relevanceScore") if isinstance(result, Mapping) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count or index in seen:
            raise RerankerError(f"Bedrock rerank answered for chunk {index!r} of {count}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RerankerError(f"Bedrock rerank answered the score {value!r}")
        seen.add(index)
        ranked.append((index, float(value)))
    return ranked
