"""The native media meter: image sizes from headers, PDF pages, the providers' rules, never an error."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from _media_samples import gif, image_block, jpeg_header, pdf, png, png_header, webp_header
from hypothesis import given, settings
from hypothesis import strategies as st
from strands_offload import _native

RULES = _native.MEDIA_RULES


@pytest.mark.parametrize("size", [(1, 1), (1280, 800), (800, 1280), (2560, 1600), (4000, 3000)])
def test_each_format_declares_its_size(size: tuple[int, int]) -> None:
    w, h = size
    for data in (png(w, h), gif(w, h), jpeg_header(w, h), webp_header(w, h)):
        assert _native.image_size(data) == size
        assert _native.image_size(base64.b64encode(data).decode()) == size


def test_base64_text_and_data_uris_cost_as_the_bytes() -> None:
    data = png(2560, 1600)
    text = base64.b64encode(data).decode()
    wrapped = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    for rule in RULES:
        expected = _native.image_tokens(data, rule)
        assert _native.image_tokens(text, rule) == expected
        assert _native.image_tokens(wrapped, rule) == expected
        assert _native.image_tokens("data:image/png;base64," + text, rule) == expected


def test_published_examples_through_the_binding() -> None:
    assert _native.image_tokens(png(1092, 1092), "anthropic") == 1590
    assert _native.image_tokens(png(200, 200), "anthropic") == 54
    assert _native.image_tokens(png(1024, 1024), "openai-tile-85") == 765
    assert _native.image_tokens(jpeg_header(2048, 4096), "openai-tile-85") == 1105
    assert _native.image_tokens(jpeg_header(2048, 4096), "openai-tile-85", detail="low") == 85
    assert _native.image_tokens(png(384, 384), "gemini") == 258
    assert _native.pdf_page_count(pdf(9)) == 9
    assert _native.pdf_page_count(base64.b64encode(pdf(9)).decode()) == 9


def test_messages_count_top_level_and_tool_result_media() -> None:
    shot = image_block(png(1280, 800))
    messages: list[Any] = [
        {"role": "user", "content": [{"text": "look"}, shot]},
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"text": "ok"}, shot, shot]}},
                {"document": {"format": "pdf", "name": "d", "source": {"bytes": pdf(2)}}},
                {"video": {"format": "mp4", "source": {"s3Location": {"uri": "s3://b/v.mp4"}}}},
                {"image": {"format": "png", "source": {"s3Location": {"uri": "s3://b/i.png"}}}},
            ],
        },
    ]
    assert _native.media_tokens(messages, "anthropic") == 3 * 1366 + 2 * 3000 + 1600 + 1600
    assert _native.media_block_tokens({"text": "x" * 1000}, "anthropic") == 0
    assert _native.media_block_tokens(messages[1]["content"][0], "anthropic") == 2 * 1366


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x89PNG\r\n",
        png_header(65535, 65535),
        b"GIF89a\xff\xff\xff\xff",
        b"\xff\xd8\xff",
        "@@not base64@@",
        "",
        None,
    ],
)
def test_malformed_input_costs_the_cap(data: Any) -> None:
    for rule in RULES:
        assert _native.image_tokens(data, rule) == _native.media_cap(rule)
        assert _native.media_tokens([{"role": "user", "content": [image_block(data)]}], rule) == _native.media_cap(rule)


def test_an_unknown_rule_or_detail_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="anthropic"):
        _native.media_tokens([], "claude")
    with pytest.raises(ValueError, match="detail"):
        _native.image_tokens(b"", "anthropic", detail="medium")


_ODD = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=8), st.binary(max_size=40)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["image", "document", "video", "toolResult", "content", "source", "bytes", "format", "text"]
            ),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_ODD, st.sampled_from(RULES))
def test_any_shape_counts_without_raising(value: Any, rule: str) -> None:
    assert _native.media_tokens(value, rule) >= 0
    assert _native.media_tokens([{"role": "user", "content": [value]}], rule) >= 0
    assert _native.media_block_tokens(value, rule) >= 0


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=64), st.text(max_size=64)), st.sampled_from(RULES))
def test_any_bytes_cost_between_one_and_the_cap(data: bytes | str, rule: str) -> None:
    assert 1 <= _native.image_tokens(data, rule) <= _native.media_cap(rule)
    _native.pdf_page_count(data)
    _native.image_size(data)
