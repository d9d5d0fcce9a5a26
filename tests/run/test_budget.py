import pytest

from hotdogbench_core.run.budget import CostBudget


def test_probe_then_estimate_then_stop():
    b = CostBudget(1.0)
    assert b.reserve("m") == ("go", 0.0)  # first request probes the price
    assert b.reserve("m") == ("wait", 0.0)  # one probe at a time
    b.settle("m", 0.0, 0.3)
    assert b.spent_usd == pytest.approx(0.3) and b.estimate("m") == 0.3
    assert b.reserve("m") == ("go", 0.3)
    assert b.reserve("m") == ("go", 0.3)  # 0.3 spent + 0.6 reserved = 0.9
    assert b.reserve("m")[0] == "stop"  # + 0.3 would pass 1.0
    b.settle("m", 0.3, None)  # a retry: nothing billed, reservation freed
    assert b.reserved_usd == pytest.approx(0.3)


def test_models_estimated_separately_and_spent_counts_prior_sessions():
    b = CostBudget(0.5, spent_usd=0.45)
    assert b.reserve("a") == ("go", 0.0)
    b.settle("a", 0.0, 0.01)
    assert b.reserve("a") == ("go", 0.01)
    assert b.reserve("b") == ("go", 0.0)
    b.settle("b", 0.0, 0.1)
    assert b.reserve("b")[0] == "stop"


def test_spent_over_cap_stops_even_without_estimate():
    b = CostBudget(0.1, spent_usd=0.2)
    assert b.reserve("x")[0] == "stop"


def test_bad_cap():
    with pytest.raises(ValueError, match="max_cost_usd: must be"):
        CostBudget(0)
