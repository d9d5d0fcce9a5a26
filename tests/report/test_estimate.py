"""The cost estimate: prices from /v1/models, token guesses, and the arithmetic."""
import polars as pl
import pytest

from hotdogbench_core.report import estimate as est
from hotdogbench_core.report.format import fmt
from hotdogbench_core.sim.app import MODEL_PROFILES, SimConfig, Simulator
from support.simrun import RUN, sim_out  # noqa: F401 (fixture)


def test_parse_pricing_skips_variable_and_missing_prices():
    body = {"data": [
        {"id": "a/x", "pricing": {"prompt": "0.000001", "completion": "0.000002", "image": "0.001"}},
        {"id": "a/auto", "pricing": {"prompt": "-1", "completion": "-1"}},  # OpenRouter's variable pricing
        {"id": "a/none"},
        {"id": "a/bad", "pricing": {"prompt": "n/a"}},
        "junk",
    ]}
    assert est.parse_pricing(body) == {"a/x": {"prompt": 1e-6, "completion": 2e-6, "image": 0.001, "request": 0.0}}
    assert est.parse_pricing({}) == {}


def test_fetch_from_the_simulator_and_fail_cleanly():
    with Simulator(SimConfig()) as sim:
        prices = est.fetch_pricing(sim.base_url, use_cache=False)
        assert est.pricing_for("base_url", sim.base_url) == prices
    for m, prof in MODEL_PROFILES.items():
        assert prices[m] == pytest.approx({k: prof[k] for k in est.PRICE_KEYS})
    assert est.pricing_for("simulator") == prices
    with pytest.raises(est.PricingUnavailable, match="127.0.0.1:9"):
        est.fetch_pricing("http://127.0.0.1:9", use_cache=False, timeout=2)
    with pytest.raises(est.PricingUnavailable):
        est.pricing_for("base_url", None)


def test_estimate_arithmetic_and_unknown_prices():
    prices = {"a/x": {"prompt": 1e-6, "completion": 2e-6, "image": 0.001, "request": 0.0001}}
    past = {"a/x": est.TokenGuess(500.0, 10.0, "run r1")}
    df = est.estimate_costs(["a/x", "b/unpriced"], 100, prices, past)
    x = df.row(0, named=True)
    assert x["usd_per_photo"] == pytest.approx(500e-6 + 20e-6 + 0.001 + 0.0001)
    assert x["cost_usd"] == pytest.approx(100 * x["usd_per_photo"]) and x["tokens_from"] == "run r1"
    y = df.row(1, named=True)
    assert y["cost_usd"] is None and y["tokens_from"] == "default guess"
    assert y["prompt_tokens"] == est.DEFAULT_PROMPT_TOKENS
    text = est.describe_total(df)
    assert text.startswith(f"about {fmt(x['cost_usd'], 'usd')} for 100 photos × 1 model") and "b/unpriced" in text
    assert est.describe_total(est.estimate_costs([], 5, prices)) == "no models chosen"
    assert est.describe_total(est.estimate_costs(["b/u"], 5, prices)) == "no price known for the chosen models"


def test_reasoning_models_get_more_completion_tokens():
    assert est.guess_tokens("openai/gpt-6-luna").completion > est.guess_tokens("anthropic/claude-haiku-5.5").completion


def test_past_tokens_from_runs_against_the_same_kind_of_endpoint(sim_out):
    past = est.past_tokens(sim_out)
    run = pl.read_parquet(sim_out / RUN / "typesafe__jev-1.14.parquet")
    g = past["typesafe/jev-1.14"]
    assert g.basis == f"run {RUN}" and g.prompt == pytest.approx(run["prompt_tokens"].drop_nulls().mean())
    assert set(est.past_tokens(sim_out, "http://127.0.0.1:1234")) == set(past)  # the simulator: loopback
    assert est.past_tokens(sim_out, "https://openrouter.ai/api") == {}  # simulated tokens say nothing of real ones
