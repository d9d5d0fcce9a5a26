"""The cost estimate under conditions: image tokens scaled by the pixels sent, the question's by its length."""
import io

import pytest
from PIL import Image

from support.tables import write_table
from hotdogbench_core.protocol.chat import QUESTION
from hotdogbench_core.protocol.conditions import resolve_conditions
from hotdogbench_core.report import estimate as est
from hotdogbench_core.store.dataset import load_dataset

PRICES = {"a/chat": {"prompt": 1e-6, "completion": 2e-6, "image": 0.0, "request": 0.0}}


def _jpeg(w, h):
    out = io.BytesIO()
    Image.new("RGB", (w, h), (200, 100, 50)).save(out, "JPEG")
    return out.getvalue()


@pytest.fixture
def table(tmp_path):
    rows = [{"id": 1, "image": _jpeg(100, 50), "is_hot_dog": True, "category": "hot_dog"},
            {"id": 2, "image": _jpeg(400, 200), "is_hot_dog": False, "category": "taco"}]
    return load_dataset(write_table(tmp_path / "t.parquet", rows))


def test_pixel_share_worked_value(table):
    # px:100: 100x50 stays (5,000 px), 400x200 becomes 100x50 (5,000): 10,000 of 85,000 pixels
    assert est.pixel_share(table, 100) == pytest.approx(10_000 / 85_000)
    assert est.pixel_share(table, None) == 1.0 and est.pixel_share(table, 1000) == 1.0


def test_tokens_and_usd_per_condition(table):
    conds = resolve_conditions(["reference", "small=px:100,q:50", "coarse=q:20", 'terse=prompt:"Hot dog?"'])
    f = est.estimate_costs(["a/chat"], 2, PRICES, conditions=conds, dataset=table)
    assert f.columns == [c.name for c in est.ESTIMATE_BY_CONDITION]
    rows = {r["condition"]: r for r in f.iter_rows(named=True)}
    question = len(QUESTION) / 4 + est.MESSAGE_TOKENS
    image = est.DEFAULT_PROMPT_TOKENS - question
    assert rows["reference"]["prompt_tokens"] == est.DEFAULT_PROMPT_TOKENS
    assert rows["small"]["prompt_tokens"] == round(image * 10_000 / 85_000 + question, 1)
    assert rows["coarse"]["prompt_tokens"] == est.DEFAULT_PROMPT_TOKENS  # JPEG quality: bytes, not pixels
    assert rows["terse"]["prompt_tokens"] == round(image + len("Hot dog?") / 4 + est.MESSAGE_TOKENS, 1)
    r = rows["small"]
    assert r["usd_per_photo"] == pytest.approx(r["prompt_tokens"] * 1e-6 + r["completion_tokens"] * 2e-6, rel=1e-3)
    assert r["cost_usd"] == pytest.approx(2 * r["usd_per_photo"]) and "pixels" in r["tokens_from"]
    assert est.describe_total(f).endswith("for 2 photos × 1 model(s) × 4 condition(s)")
    # no conditions: the estimate as it always was
    assert est.estimate_costs(["a/chat"], 2, PRICES).columns == [c.name for c in est.ESTIMATE]
