"""--condition and --conditions as a user types them: real subprocesses, real HTTP, real files; bad specs named
by their flag before anything is sent; the notebook's conditions box."""
import json
import subprocess
import sys

import pytest

from support.cli import cli_env
from support.paths import REPO
from hotdogbench_core.protocol.conditions import ConditionError
from hotdogbench_core.ui import notebook as nbargs
from hotdogbench_core.ui.cli import FLAGS


def cli(*args, timeout=180):
    env = cli_env()
    return subprocess.run([sys.executable, "-m", "hotdogbench_core", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=timeout)


def test_demo_with_conditions_from_flags_and_a_file(tmp_path):
    conds = tmp_path / "conditions.toml"
    conds.write_text('[conditions.tiny]\npx = 48\n\n[conditions.terse]\nprompt = "Hot dog? JSON."\n')
    p = cli("demo", "--models", "anthropic/claude-haiku-5.5", "--out", str(tmp_path / "out"), "--run", "d",
            "--quiet", "--start-concurrency", "32", "--condition", "reference", "--conditions", str(conds))
    assert p.returncode in (0, 6), p.stderr  # 6: a demo's simulated 5xx may leave a model without an answer
    assert "66 photos x 1 models x 3 conditions (tiny, terse, reference) -> " in p.stdout
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert [(x["model"], x.get("condition")) for x in lines] == [
        ("anthropic/claude-haiku-5.5", "tiny"), ("anthropic/claude-haiku-5.5", "terse"),
        ("anthropic/claude-haiku-5.5", None)]
    assert list(lines[0])[:2] == ["model", "condition"]
    run_dir = tmp_path / "out" / "d"
    assert (run_dir / "anthropic__claude-haiku-5.5@tiny.parquet").is_file()
    summaries = json.loads((run_dir / "summary.json").read_text())
    tiny = next(s for s in summaries if s.get("condition") == "tiny")
    ref = next(s for s in summaries if "condition" not in s)
    # the demo's condition effects: fewer tokens for fewer pixels
    assert tiny["prompt_tokens_per_photo"] < ref["prompt_tokens_per_photo"]


@pytest.mark.parametrize("args,message", [
    (["--condition", "small=px:abc"], "hotdogbench: error: --condition: small=px:abc: px must be a whole number "
                                      "(the longest side in pixels) from 16 to 8192, got 'abc'"),
    (["--condition", "small"], "hotdogbench: error: --condition: small: write NAME=SPEC"),
    (["--condition", "a=px:64", "--condition", "a=q:50"], "--condition: a: two conditions have this name"),
    (["--condition", 'p=provider:only=X,provider:allow_fallbacks=perhaps'],
     "--condition: p=provider:only=X,provider:allow_fallbacks=perhaps: provider allow_fallbacks must be true or "
     "false"),
])
def test_bad_condition_flags_are_named_and_nothing_is_sent(tmp_path, args, message):
    p = cli("demo", "--out", str(tmp_path / "out"), "--run", "x", *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


def test_a_bad_conditions_file_is_named_by_its_flag_and_field(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("[conditions.small]\nq = 500\n")
    p = cli("demo", "--out", str(tmp_path / "out"), "--run", "x", "--conditions", str(bad))
    assert p.returncode == 2
    assert f"--conditions: {bad}: [conditions.small]: q must be a whole number (the JPEG quality) from 1 to 100, " \
           "got 500" in p.stderr
    assert FLAGS["conditions"] == "--condition" and FLAGS["conditions_file"] == "--conditions"


def test_the_notebook_conditions_box():
    assert nbargs.condition_lines("") is None and nbargs.condition_lines("\n  \n# nothing\n") is None
    assert nbargs.condition_lines("reference\n small=px:512 \n# a comment\n") == ["reference", "small=px:512"]
    with pytest.raises(ConditionError) as e:
        nbargs.condition_lines("small=px:5")
    assert nbargs.FIELD_LABELS[e.value.field] == "Conditions"
    assert nbargs.sim_config({}, conditions=True).image_tokens == "pixels"
    assert nbargs.sim_config({}).image_tokens == "bytes"
