"""The self-contained offline report: content, no outside references, and a real browser with no network."""
import json
import re

import pytest

from support.browser import chromium
from hotdogbench_core.report import runs as rp
from hotdogbench_core.report.format import fmt
from hotdogbench_core.ui.cli import main
from hotdogbench_core.report.html import OFFLINE_NAME, build_offline_report, write_offline_report
from support.simrun import MODELS, RUN, sim_copy, sim_out  # noqa: F401 (fixtures)


def test_offline_report_holds_every_model_and_chart(sim_out):
    runs = [rp.load_run(sim_out, RUN)]
    html = build_offline_report(runs)
    for s in runs[0].summaries:
        assert s["model"] in html
        assert f"{s['accuracy']:.1%}" in html and fmt(s["cost_per_1000_photos_usd"], "usd") in html
    assert html.count("<svg") >= 6  # accuracy, by category, cost, limit trace, latency, latency vs in flight
    assert "data:image/" in html  # thumbnails inline
    assert "Unscored bonus answers" in html and "built-in simulator" in html
    assert "<script" not in html
    outside = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert outside == [], "the offline report must load nothing from outside"


def test_pairs_and_cis_shown_when_present(sim_copy):
    run_dir = sim_copy / RUN
    summaries = json.loads((run_dir / "summary.json").read_text())
    summaries[0]["accuracy_ci95"] = [0.8125, 0.9531]
    (run_dir / "summary.json").write_text(json.dumps(summaries))
    (run_dir / "pairs.json").write_text(json.dumps([{
        "a": MODELS[0], "b": MODELS[1], "both_answered": 60, "only_a_right": 6, "only_b_right": 2,
        "mcnemar_p": 0.289, "accuracy_a": 0.9, "accuracy_b": 0.85, "accuracy_diff": 0.05,
        "accuracy_diff_ci95": [-0.01, 0.11]}]))
    html = build_offline_report([rp.load_run(sim_copy, RUN)])
    assert "[81.2%–95.3%]" in html and "Pairs (McNemar)" in html and "0.289" in html
    assert html.count("<svg") >= 7  # plus the pairs matrix


def test_gallery_without_the_photo_table(sim_copy, monkeypatch, tmp_path):
    monkeypatch.setattr(rp, "dataset_candidates", lambda data_dir="data": [])
    html = build_offline_report([rp.load_run(sim_copy, RUN)])
    assert "photo table was not found" in html and "data:image/" not in html


def test_cli_report(sim_copy, capsys):
    assert main(["report", "--out", str(sim_copy), "--run", RUN]) == 0
    path = sim_copy / RUN / OFFLINE_NAME
    assert path.is_file() and f"wrote {path}" in capsys.readouterr().out
    other = sim_copy / "elsewhere.html"
    assert main(["report", "--out", str(sim_copy), "--run", RUN, "-o", str(other)]) == 0 and other.is_file()
    assert main(["report", "--out", str(sim_copy), "--run", "nope"]) == 2
    assert "no readable summary.json" in capsys.readouterr().err


@pytest.mark.slow
def test_offline_report_renders_in_chromium_without_network(sim_copy, tmp_path):
    path = write_offline_report(sim_copy, [RUN])
    asked = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900}, offline=True)

        def gate(route):
            if route.request.url.startswith(("file:", "data:")):
                route.continue_()
            else:
                asked.append(route.request.url)
                route.abort()

        page.route("**/*", gate)
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        sizes = page.eval_on_selector_all("figure svg", "els => els.map(e => e.getBoundingClientRect().height)")
        images = page.eval_on_selector_all(".card img", "els => els.map(e => e.complete && e.naturalWidth > 0)")
        text = page.inner_text("table.leaderboard")
        page.screenshot(path=str(tmp_path / "offline_report.png"), full_page=True)
    assert asked == []
    assert len(sizes) >= 6 and all(h > 50 for h in sizes)
    assert images and all(images)
    assert all(m in text for m in MODELS)
