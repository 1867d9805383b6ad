"""Images and documents on every provider's wire, each official SDK over its fake HTTP transport.

One conversation (a user message with an image, a PDF and an image URL; a
tool call whose result carries a screenshot) is sent through each adapter;
the request bodies are validated against the SDK's own request types and
the media blocks are checked as each provider documents them.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google import genai
from google.genai import types
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from adapters_support import (
    ANSWER_TURN,
    SYSTEM,
    TOOLS,
    FakeServer,
    anthropic_message_body,
    make_request,
    openai_completion_body,
)
from weakprompt.adapters import AnthropicAdapter, GeminiAdapter, OpenAIAdapter, OpenAIResponsesAdapter
from weakprompt.adapters.wire.media import chat_tool_followup, placeholder
from weakprompt.adapters.wire.openai import openai_messages
from weakprompt.errors import ConfigurationError
from weakprompt.messages import Message, ToolCall
from weakprompt.parts import DocumentPart, ImagePart, TextPart

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.4 tiny"
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()
SHOT = ImagePart(media_type="image/png", data=PNG, name="shot.png")
REPORT = DocumentPart(media_type="application/pdf", data=PDF, name="report.pdf")
LINKED = ImagePart(media_type="image/jpeg", url="https://example.test/cat.jpg")

USER = Message.of("user", ["What is on these?", SHOT, REPORT, LINKED])
CALL = Message("assistant", "", tool_calls=(ToolCall(id="call_1", name="get_weather", arguments="{}"),))
RESULT = Message.of("tool", ["captured", SHOT], tool_call_id="call_1", name="get_weather")
CONVERSATION = (SYSTEM, USER, CALL, RESULT)


def _request() -> Any:
    return make_request(CONVERSATION, tools=TOOLS)


# -- OpenAI Chat Completions ----------------------------------------------------------------------


def test_chat_sends_image_url_and_file_parts_and_tool_images_in_a_following_user_message() -> None:
    server = FakeServer().reply(200, openai_completion_body(ANSWER_TURN))
    client = openai.OpenAI(api_key="sk-test", base_url="http://fake.test/v1", http_client=server.client())
    OpenAIAdapter("gpt-test", client=client).complete(_request())
    (body,) = server.bodies()
    TypeAdapter(CompletionCreateParamsNonStreaming).validate_python(body)
    messages = body["messages"]
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is on these?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
            {
                "type": "file",
                "file": {"file_data": f"data:application/pdf;base64,{B64_PDF}", "filename": "report.pdf"},
            },
            {"type": "image_url", "image_url": {"url": "https://example.test/cat.jpg"}},
        ],
    }
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[3]["content"] == "captured\n\n[1 attachment(s) follow in the next user message]"
    assert messages[4]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{B64_PNG}"},
    }
    assert "call_1" in messages[4]["content"][0]["text"]


def test_chat_follow_up_comes_after_the_whole_run_of_tool_results() -> None:
    calls = (ToolCall(id="a", name="t", arguments="{}"), ToolCall(id="b", name="t", arguments="{}"))
    plain = Message("tool", "no picture", tool_call_id="b", name="t")
    wire = openai_messages([Message("assistant", "", tool_calls=calls), RESULT, plain])
    assert [m["role"] for m in wire] == ["assistant", "tool", "tool", "user"]
    assert chat_tool_followup([plain]) is None
    only_media = openai_messages(
        [Message.of("tool", [SHOT], tool_call_id="c", name="t"), Message("user", "ok")]
    )
    assert only_media[0]["content"] == "[1 attachment(s) follow in the next user message]"
    assert [m["role"] for m in only_media] == ["tool", "user", "user"]


def test_chat_sends_text_documents_as_text_and_other_documents_as_a_named_placeholder() -> None:
    notes = DocumentPart(media_type="text/plain", data=b"milk, eggs", name="notes.txt")
    sheet = DocumentPart(media_type="application/vnd.ms-excel", data=b"\xd0\xcf", name="s.xls")
    binary_text = DocumentPart(media_type="text/plain", data=b"\xff\xfe")
    (wire,) = openai_messages([Message.of("user", [notes, sheet, binary_text])])
    content = wire["content"]
    assert content[0] == {"type": "text", "text": "notes.txt:\nmilk, eggs"}
    assert content[1]["text"] == placeholder(sheet, "Chat Completions takes PDF bytes and text only")
    assert "document s.xls (application/vnd.ms-excel, 2 bytes)" in content[1]["text"]
    assert "document (text/plain, 2 bytes)" in content[2]["text"]


# -- OpenAI Responses ----------------------------------------------------------------------------------


def _responses_body() -> dict[str, Any]:
    text = {"type": "output_text", "text": "done", "annotations": [], "logprobs": []}
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1780000000,
        "model": "gpt-test",
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "output": [
            {"id": "m", "type": "message", "role": "assistant", "status": "completed", "content": [text]}
        ],
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": {
            "input_tokens": 3,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 4,
        },
    }


def test_responses_sends_input_image_and_input_file_also_inside_a_function_call_output() -> None:
    server = FakeServer().reply(200, _responses_body())
    client = openai.OpenAI(api_key="sk-test", base_url="https://api.test/v1", http_client=server.client())
    OpenAIResponsesAdapter("gpt-test", client=client).complete(_request())
    (body,) = server.bodies()
    TypeAdapter(ResponseCreateParamsNonStreaming).validate_python(body)
    user = next(item for item in body["input"] if item.get("role") == "user")
    assert user["content"] == [
        {"type": "input_text", "text": "What is on these?"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{B64_PNG}", "detail": "auto"},
        {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{B64_PDF}",
            "filename": "report.pdf",
        },
        {"type": "input_image", "image_url": "https://example.test/cat.jpg", "detail": "auto"},
    ]
    output = next(item for item in body["input"] if item.get("type") == "function_call_output")
    assert output["output"] == [
        {"type": "input_text", "text": "captured"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{B64_PNG}", "detail": "auto"},
    ]


def test_responses_sends_a_linked_document_as_a_file_url() -> None:
    from weakprompt.adapters.wire.openai_responses import responses_items

    linked = DocumentPart(media_type="application/pdf", url="https://example.test/r.pdf")
    (item,) = responses_items(Message.of("user", [linked]))
    assert item["content"] == [{"type": "input_file", "file_url": "https://example.test/r.pdf"}]


# -- Anthropic ---------------------------------------------------------------------------------------------


def test_anthropic_sends_image_and_document_blocks_and_images_inside_the_tool_result() -> None:
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url="http://fake.test", http_client=server.client()
    )
    AnthropicAdapter("claude-test", client=client).complete(_request())
    (body,) = server.bodies()
    TypeAdapter(MessageCreateParamsNonStreaming).validate_python(body)
    user, _assistant, results = body["messages"]
    assert user["content"] == [
        {"type": "text", "text": "What is on these?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
            "title": "report.pdf",
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.test/cat.jpg"}},
    ]
    assert results["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": [
                {"type": "text", "text": "captured"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG}},
            ],
        }
    ]


def test_anthropic_takes_text_documents_and_names_what_it_cannot_take() -> None:
    from weakprompt.adapters.wire.anthropic import anthropic_messages

    notes = DocumentPart(media_type="text/markdown", data=b"# plan", name="plan.md")
    tiff = ImagePart(media_type="image/tiff", data=b"II*\x00")
    sheet = DocumentPart(media_type="application/zip", data=b"PK")
    linked_text = DocumentPart(media_type="text/plain", url="https://example.test/a.txt")
    _, (wire,) = anthropic_messages([Message.of("user", ["see", notes, tiff, sheet, linked_text])])
    blocks = wire["content"]
    assert blocks[1] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "plan.md:\n# plan"},
        "title": "plan.md",
    }
    assert (
        "JPEG, PNG, GIF and WebP" in blocks[2]["text"] and "image (image/tiff, 4 bytes)" in blocks[2]["text"]
    )
    assert "PDF and plain-text documents" in blocks[3]["text"]
    assert "document (text/plain, at https://example.test/a.txt)" in blocks[4]["text"]


# -- Gemini -------------------------------------------------------------------------------------------------


def _gemini_reply() -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"parts": [{"text": "done"}], "role": "model"}, "index": 0, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
    }


def test_gemini_sends_inline_data_and_file_data_and_tool_images_after_the_function_response() -> None:
    server = FakeServer().reply(200, _gemini_reply())
    options = types.HttpOptions(base_url="https://gemini.test", httpx_client=server.client())
    GeminiAdapter("gemini-test", client=genai.Client(api_key="k", http_options=options)).complete(_request())
    (body,) = server.bodies()
    contents = [types.Content.model_validate(content) for content in body["contents"]]
    user, _model, results = contents
    assert user.parts is not None and results.parts is not None
    assert user.parts[0].text == "What is on these?"
    assert user.parts[1].inline_data == types.Blob(mime_type="image/png", data=PNG)
    assert user.parts[2].inline_data == types.Blob(mime_type="application/pdf", data=PDF)
    assert user.parts[3].file_data == types.FileData(
        file_uri="https://example.test/cat.jpg", mime_type="image/jpeg"
    )
    assert results.parts[0].function_response is not None
    assert results.parts[1].inline_data == types.Blob(mime_type="image/png", data=PNG)


# -- LocalAdapter --------------------------------------------------------------------------------------------


def test_the_local_adapter_refuses_an_image_naming_the_model(tmp_path: Any) -> None:
    from weakprompt.adapters.wire.media import refuse_media

    with pytest.raises(
        ConfigurationError, match=r"LocalAdapter \(tiny\.gguf\) cannot read images: message 1 \(user\)"
    ):
        refuse_media(CONVERSATION, adapter="LocalAdapter", model="tiny.gguf")
    refuse_media([SYSTEM, Message("user", "text only")], adapter="LocalAdapter", model="tiny.gguf")
    assert TextPart("x").kind == "text"


class _SilentLlama:
    """A llama.cpp stand-in that must never be asked: the refusal comes first."""

    metadata = {"tokenizer.chat_template": "{{ messages }}"}

    def create_chat_completion(self, **kwargs: Any) -> Any:
        raise AssertionError("an image reached the local model")

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [len(word) for word in text.split()]

    def n_ctx(self) -> int:
        return 512


def test_the_local_adapter_refuses_image_parts_before_calling_the_model() -> None:
    import asyncio

    from weakprompt.adapters.local import LocalAdapter

    adapter = LocalAdapter(llama=_SilentLlama())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"LocalAdapter \(.*\) cannot read images"):
        adapter.complete(make_request([SYSTEM, USER]))

    async def streamed() -> None:
        async for _ in adapter.stream(make_request([SYSTEM, USER])):
            pass

    with pytest.raises(ConfigurationError, match="cannot read images"):
        asyncio.run(streamed())


def test_linked_pdfs_go_as_urls_where_the_api_takes_them_and_as_placeholders_where_not() -> None:
    from weakprompt.adapters.wire.anthropic import anthropic_messages

    linked = DocumentPart(media_type="application/pdf", url="https://example.test/r.pdf", name="r.pdf")
    unnamed = DocumentPart(media_type="application/pdf", data=PDF)
    _, (wire,) = anthropic_messages([Message.of("user", ["read", linked, unnamed])])
    assert wire["content"][2] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
    }
    assert wire["content"][1] == {
        "type": "document",
        "source": {"type": "url", "url": "https://example.test/r.pdf"},
        "title": "r.pdf",
    }
    (chat,) = openai_messages([Message.of("user", ["read", linked])])
    assert "document r.pdf (application/pdf, at https://example.test/r.pdf)" in chat["content"][1]["text"]
