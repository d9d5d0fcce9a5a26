import json
from pathlib import Path

import pytest

from hotdogbench_core.protocol.answers import RETRY_STATUSES
from hotdogbench_core.protocol.chat import QUESTION, SCHEMA, parse_verdict
from hotdogbench_core.protocol.models import MODELS, PRESETS, UnknownModelError, resolve_models
from hotdogbench_core.protocol.request import body_for, request_for


def endpoint_path(model):
    return request_for(model).path

REF = json.loads((Path(__file__).parents[1] / "fixtures" / "reference_bodies.json").read_text())
IMAGE = bytes.fromhex(REF["image_hex"])


@pytest.mark.parametrize("model", REF["models"])
def test_body_is_byte_for_byte_the_reference(model):
    wire = json.dumps(body_for(model, IMAGE), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert wire == REF["bodies"][model]


def test_registry_question_schema_and_retry_set_match_reference():
    assert list(MODELS) == REF["models"]
    assert QUESTION == REF["question"]
    assert SCHEMA == REF["schema"]
    assert sorted(RETRY_STATUSES) == REF["retry_statuses"]


@pytest.mark.parametrize("text,expected", REF["parse"])
def test_parse_matches_reference(text, expected):
    assert parse_verdict(text) is expected


def test_presets_and_ids():
    assert resolve_models("cheap") == PRESETS["cheap"]
    assert resolve_models("all") == list(MODELS)
    assert resolve_models("a/b, c/d,a/b") == ["a/b", "c/d"]
    assert resolve_models("cheap,x/y")[-1] == "x/y"


def test_unknown_preset_names_it():
    with pytest.raises(UnknownModelError, match="'cheapest'"):
        resolve_models("cheapest")
    with pytest.raises(UnknownModelError, match="no model"):
        resolve_models(" , ")


def test_endpoints():
    assert endpoint_path("typesafe/jev-1.14") == "/alpha/decisions"
    assert endpoint_path("anthropic/claude-haiku-5.5") == "/v1/chat/completions"
    assert endpoint_path("someone/unknown-vlm") == "/v1/chat/completions"
    # ids outside the registry get the plain chat body, no extras
    b = body_for("someone/unknown-vlm", b"\xff\xd8\xff")
    assert set(b) == {"model", "messages", "max_tokens", "response_format", "usage"}


def test_free_models_are_known_to_share_twenty_a_minute_on_the_key():
    from hotdogbench_core.protocol.models import known_rates

    per_s = 19 / 60  # one under the count, as a count a server states (answers.minute_count_rate)
    run = ["meta/llama-9-vision:free", "openai/gpt-6-luna", "google/gemma-9:free"]
    assert known_rates(run, together=True) == {"meta/llama-9-vision:free": pytest.approx(per_s / 2),
                                               "google/gemma-9:free": pytest.approx(per_s / 2)}
    assert known_rates(run, together=False)["google/gemma-9:free"] == pytest.approx(per_s)  # one at a time
    assert known_rates(["a/b:free", "a/b:free"], together=True)["a/b:free"] == pytest.approx(per_s / 2)  # two arms
    assert known_rates(["openai/gpt-6-luna", "a/free", "a/b:freebie"], together=True) == {}
