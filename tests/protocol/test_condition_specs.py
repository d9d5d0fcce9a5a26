"""Conditions: the spec syntax (command line and files), every refusal naming its part, and the request a
condition makes (the reference's bytes untouched)."""
import json
from pathlib import Path

import pytest

from hotdogbench_core.protocol.chat import QUESTION
from hotdogbench_core.protocol.conditions import (REFERENCE, REFERENCE_CONDITION, Condition, ConditionError,
                                                  arm_label, load_conditions_file, parse_condition, parse_spec,
                                                  resolve_conditions)
from hotdogbench_core.protocol.decisions import INSTRUCTIONS
from hotdogbench_core.protocol.request import request_for

REF = json.loads((Path(__file__).parents[1] / "fixtures" / "reference_bodies.json").read_text())
IMAGE = bytes.fromhex(REF["image_hex"])


def wire(request, image=IMAGE) -> str:
    return json.dumps(request.body(image), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- the syntax ----------------------------------------------------------------------------------------------
def test_spec_parts_and_their_canonical_form():
    c = parse_condition('mix=px:512,q:80,prompt:"Hot dog, or not? JSON: {\\"hot_dog\\": true}",'
                        'provider:only=Cloudflare|Together,provider:allow_fallbacks=false,'
                        'provider:quantizations=fp8|bf16')
    assert c == Condition("mix", 512, 80, 'Hot dog, or not? JSON: {"hot_dog": true}',
                          {"only": ["Cloudflare", "Together"], "allow_fallbacks": False,
                           "quantizations": ["fp8", "bf16"]})
    assert list(c.spec()) == ["px", "q", "prompt", "provider"]
    assert parse_spec("mix", c.text()) == c  # what the manifest writes reads back as the same condition
    assert str(c).startswith("mix=px:512,q:80,prompt:")
    assert c.transforms and not c.prompt_only and not c.is_reference


def test_reference_alone_and_empty_specs():
    assert parse_condition("reference") is REFERENCE_CONDITION and REFERENCE_CONDITION.is_reference
    assert parse_condition("reference=").is_reference
    again = parse_condition("again=")  # an A/A arm: the reference's request under another name
    assert again.spec() == {} and not again.is_reference and again.prompt_only
    assert parse_condition("terse=prompt:Hot dog?").prompt == "Hot dog?"  # unquoted text without commas


@pytest.mark.parametrize("arg,problem", [
    ("small=px:abc", "px must be a whole number (the longest side in pixels) from 16 to 8192, got 'abc'"),
    ("small=px:8", "from 16 to 8192, got 8"),
    ("small=q:0", "q must be a whole number (the JPEG quality) from 1 to 100, got 0"),
    ("small=q:101", "got 101"),
    ("small=size:512", "'size' is not a part of a condition (known: px, q, prompt, provider)"),
    ("small=px512", "'px512' is not KEY:VALUE"),
    ("small=px:512,,q:80", "an empty item"),
    ("small=px:512,px:256", "px is given twice"),
    ('t=prompt:"open', 'a quote (") is not closed'),
    ("t=prompt:", "prompt must be a non-empty text"),
    ("t=prompt:" + "x" * 4001, "more than 4000"),
    ("p=provider:only=", "provider only must be one or more names"),
    ("p=provider:first=Cloudflare", "provider 'first' is not one of only, order, allow_fallbacks, quantizations"),
    ("p=provider:only", "is not provider:KEY=VALUE"),
    ("p=provider:allow_fallbacks=maybe", "allow_fallbacks must be true or false"),
    ("p=provider:quantizations=fp7", "quantizations fp7 unknown"),
    ("p=provider:only=A,provider:only=B", "provider only is given twice"),
    ("reference=px:512", "the name 'reference' is the reference question and photos"),
    ("small", "write NAME=SPEC"),
    ("a b=px:512", "a condition name is 1 to 40 letters"),
    ("a/b=px:512", "a condition name"),
    ("x" * 41 + "=px:512", "a condition name"),
])
def test_bad_specs_name_the_condition_and_the_part(arg, problem):
    with pytest.raises(ConditionError) as e:
        parse_condition(arg)
    assert e.value.field == "conditions"
    assert problem in e.value.problem
    assert e.value.problem.startswith(arg[:30])  # the condition as given comes first


def test_two_conditions_of_one_name_are_refused():
    with pytest.raises(ConditionError, match="small: two conditions have this name"):
        resolve_conditions(["small=px:512", "small=px:256"])
    assert resolve_conditions(None) is None and resolve_conditions([]) is None and resolve_conditions([" "]) is None


def test_conditions_files_toml_and_json(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('[conditions.reference]\n\n[conditions.small]\npx = 512\nq = 80\n\n'
                    '[conditions.terse]\nprompt = "Hot dog? JSON, please."\n\n'
                    '[conditions.pinned.provider]\nonly = ["Cloudflare"]\nallow_fallbacks = false\n')
    cs = load_conditions_file(toml)
    assert [c.name for c in cs] == ["reference", "small", "terse", "pinned"]
    assert cs[0].is_reference and cs[1] == Condition("small", 512, 80)
    assert cs[3].provider == {"only": ["Cloudflare"], "allow_fallbacks": False}
    js = tmp_path / "c.json"
    js.write_text(json.dumps({"small": {"px": 512}, "terse": {"prompt": "Hot dog?"}}))  # a bare table works too
    assert [str(c) for c in load_conditions_file(js)] == ["small=px:512", 'terse=prompt:"Hot dog?"']
    both = resolve_conditions(["tiny=px:256"], js)  # the file's first, then the flags'
    assert [c.name for c in both] == ["small", "terse", "tiny"]


@pytest.mark.parametrize("text,suffix,problem", [
    ('[conditions.small]\nq = "high"\n', ".toml", "[conditions.small]: q must be a whole number"),
    ('[conditions.small]\npixels = 3\n', ".toml", "[conditions.small]: 'pixels' is not a part of a condition"),
    ('[conditions.small\n', ".toml", "not valid TOML"),
    ('{"small": {"px": true}}', ".json", "[conditions.small]: px must be a whole number"),
    ('{"small": 512}', ".json", "[conditions.small]: the spec must be a table"),
    ('[]', ".json", "the file must hold a table of conditions"),
    ('{"bad name": {}}', ".json", "a condition name"),
])
def test_bad_conditions_files_name_the_file_and_the_field(tmp_path, text, suffix, problem):
    path = tmp_path / f"c{suffix}"
    path.write_text(text)
    with pytest.raises(ConditionError) as e:
        load_conditions_file(path)
    assert e.value.field == "conditions_file" and problem in e.value.problem
    assert str(path) in e.value.problem


def test_a_missing_conditions_file_is_named(tmp_path):
    with pytest.raises(ConditionError, match="cannot read .*nope.toml"):
        load_conditions_file(tmp_path / "nope.toml")


# -- the request a condition makes ----------------------------------------------------------------------------
@pytest.mark.parametrize("model", REF["models"])
def test_the_reference_condition_keeps_every_byte(model):
    for cond in (None, REFERENCE_CONDITION, parse_condition("reference")):
        request = request_for(model, condition=cond)
        assert wire(request) == REF["bodies"][model] and request.condition is None
        assert request.encode(IMAGE).decode() == REF["bodies"][model]
    # a condition that changes nothing in the request (an A/A arm, or a transform only) sends the same body
    for cond in (parse_condition("again="), parse_condition("small=px:64")):
        assert wire(request_for(model, condition=cond)) == REF["bodies"][model]


def test_a_prompt_condition_changes_only_the_question():
    text = 'Hot dog? Reply {"hot_dog": true} or {"hot_dog": false}.'
    cond = Condition("terse", prompt=text)
    chat = request_for("anthropic/claude-haiku-5.5", condition=cond)
    ref = json.loads(REF["bodies"]["anthropic/claude-haiku-5.5"])
    body = chat.body(IMAGE)
    assert body["messages"][0]["content"][1] == {"type": "text", "text": text}
    body["messages"][0]["content"][1]["text"] = QUESTION
    assert body == ref  # nothing else moved
    assert chat.settings()["question"] == text and chat.encode(IMAGE).decode() == wire(chat)
    dec = request_for("typesafe/jev-1.14", condition=cond)
    assert dec.body(IMAGE)["questions"]["hot_dog"] == {"type": "noul", "instructions": text}
    assert dec.settings()["instructions"] == text and INSTRUCTIONS not in wire(dec)
    assert dec.template()["questions"]["hot_dog"]["instructions"] == text


def test_a_provider_condition_routes_and_merges_over_the_models_own():
    pinned = Condition("pinned", provider={"only": ["Together"], "quantizations": ["fp8"]})
    body = request_for("anthropic/claude-haiku-5.5", condition=pinned).body(IMAGE)
    assert body["provider"] == {"only": ["Together"], "quantizations": ["fp8"]}
    clef = request_for("cloudflare/clef", condition=Condition("o", provider={"order": ["Cloudflare", "X"]}))
    assert clef.body(IMAGE)["provider"] == {"only": ["Cloudflare"], "allow_fallbacks": False,
                                            "order": ["Cloudflare", "X"]}
    assert request_for("anthropic/claude-haiku-5.5", "openai", pinned).body(IMAGE).get("provider") is None


def test_arm_labels():
    assert arm_label("a/b", None) == arm_label("a/b", REFERENCE) == "a/b"
    assert arm_label("a/b", "small") == "a/b@small"
