"""One measurement of a rate cap, on explicit times: what it estimates and when it is done."""
from hotdogbench_core.limit.cap_measurement import CapMeasurement


def measure(sends, rejects, paced_s, prior=100.0, t0=10.0):
    m = CapMeasurement(t0, prior)
    m.sends, m.rejects = sends, rejects
    m.tick(t0 + paced_s, window_full=False)
    return m


def test_estimate_is_the_accepted_rate_never_above_the_rejected_pace():
    m = measure(sends=60, rejects=20, paced_s=1.0, prior=100.0)
    assert abs(m.estimate(0.05) - 41 / 1.01) < 1e-9  # (accepted + 1) / (paced time + one prior interval)
    assert measure(sends=500, rejects=0, paced_s=1.0, prior=100.0).estimate(0.05) == 100.0  # capped by the prior
    assert measure(sends=0, rejects=5, paced_s=1.0).accepted == 0  # rejects of earlier sends: never below none
    assert measure(sends=0, rejects=0, paced_s=1000.0).estimate(0.05) == 0.05  # the floor


def test_only_time_with_the_window_not_full_counts():
    m = CapMeasurement(0.0, 50.0)
    m.tick(1.0, window_full=True)  # a full window held sends back: not the cap's doing
    m.tick(1.5, window_full=False)
    assert m.paced_s == 0.5 and m.counts(0.0) and not m.counts(-0.01)


def test_verdicts():
    args = dict(min_s=0.5, min_sends=40, max_s=5.0)
    assert measure(sends=30, rejects=5, paced_s=0.6).verdict(10.6, **args) is None  # too few accepted yet
    assert measure(sends=60, rejects=5, paced_s=0.6).verdict(10.6, **args) == "done"
    assert measure(sends=5, rejects=5, paced_s=0.1).verdict(15.0, **args) == "done"  # MEASURE_MAX_S passed
    under = measure(sends=60, rejects=0, paced_s=0.2)  # 1 s in all, the window full for 0.8 of it
    assert under.verdict(11.0, **args) == "under the window"
