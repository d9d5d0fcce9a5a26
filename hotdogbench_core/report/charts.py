"""Altair chart builders, shared by the notebooks and the offline HTML report.

Each takes a frame from hotdogbench_core.report.runs (or live.py) and returns an altair chart, or None when there
is nothing to draw. Widths are fixed (not "container") so the same spec renders in a notebook and as SVG.
Error bars are drawn wherever the frame carries CI bounds (lo/hi columns), and skipped where it doesn't.
"""
from __future__ import annotations

import altair as alt
import polars as pl

WIDTH = 520
ROW_PX = 22


def _has(df: pl.DataFrame, *cols: str) -> bool:
    return all(c in df.columns for c in cols) and df.height > 0 and \
        df.select(pl.all_horizontal(pl.col(c).is_not_null() for c in cols).any()).item()


def _ci_tooltip(df: pl.DataFrame, fmt: str) -> list:
    """Tooltip fields for a 95% interval in columns lo/hi, when the frame has one."""
    if not _has(df, "lo", "hi"):
        return []
    return [alt.Tooltip("lo:Q", format=fmt, title="95% CI lo"), alt.Tooltip("hi:Q", format=fmt, title="95% CI hi")]


def _height(df: pl.DataFrame, col: str, minimum: int = 80) -> int:
    return max(minimum, ROW_PX * df[col].n_unique())


def category_counts(counts: dict[str, int], title: str = "Photos per category") -> alt.Chart | None:
    if not counts:
        return None
    df = pl.DataFrame({"category": list(counts), "photos": list(counts.values())})
    bars = alt.Chart(df).mark_bar().encode(
        x=alt.X("photos:Q", title="photos"), y=alt.Y("category:N", sort="-x", title=None),
        color=alt.condition(alt.datum.category == "hot_dog", alt.value("#d9480f"), alt.value("#868e96")),
        tooltip=["category", "photos"])
    text = bars.mark_text(align="left", dx=3).encode(text="photos:Q", color=alt.value("black"))
    return (bars + text).properties(width=WIDTH - 120, height=_height(df, "category"), title=title)


def accuracy_heatmap(cat: pl.DataFrame, title: str = "Accuracy by category") -> alt.Chart | None:
    """Models down, categories across, accuracy as colour and text; n and CI in the tooltip."""
    if not cat.height:
        return None
    cat = cat.with_columns(pct=(pl.col("accuracy") * 100).round(1))
    tooltip = ["label", "category", alt.Tooltip("accuracy:Q", format=".1%"), "n"]
    tooltip += _ci_tooltip(cat, ".1%")
    base = alt.Chart(cat).encode(x=alt.X("category:N", title=None, axis=alt.Axis(labelAngle=-30)),
                                 y=alt.Y("label:N", title=None))
    rect = base.mark_rect().encode(
        color=alt.Color("accuracy:Q", scale=alt.Scale(scheme="redyellowgreen", domain=[0.5, 1.0], clamp=True),
                        legend=alt.Legend(format="%")),
        tooltip=tooltip)
    text = base.mark_text(fontSize=11).encode(text=alt.Text("pct:Q", format=".1f"))
    return (rect + text).properties(width=max(WIDTH - 160, 42 * cat["category"].n_unique()),
                                    height=_height(cat, "label", 60), title=title)


def accuracy_bars(lb: pl.DataFrame, title: str = "Accuracy") -> alt.Chart | None:
    if not lb.height or not _has(lb, "accuracy"):
        return None
    base = alt.Chart(lb).encode(y=alt.Y("label:N", sort="-x", title=None))
    bars = base.mark_bar(color="#4c6ef5").encode(
        x=alt.X("accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="accuracy"),
        tooltip=["label", alt.Tooltip("accuracy:Q", format=".1%"), "photos", "unanswered"])
    layers = [bars]
    if _has(lb, "accuracy_lo", "accuracy_hi"):
        layers.append(base.mark_rule(color="black").encode(x=alt.X("accuracy_lo:Q", title="accuracy"),
                                                           x2=alt.X2("accuracy_hi:Q", title="accuracy")))
    return alt.layer(*layers).properties(width=WIDTH - 160, height=_height(lb, "label"), title=title)


def cost_vs_accuracy(lb: pl.DataFrame, title: str = "Cost against accuracy") -> alt.Chart | None:
    df = lb.filter(pl.col("accuracy").is_not_null() & pl.col("cost_per_1000_photos_usd").is_not_null()) \
        if lb.height else lb
    if not df.height:
        return None
    base = alt.Chart(df).encode(
        x=alt.X("cost_per_1000_photos_usd:Q", title="USD per 1000 photos"),
        y=alt.Y("accuracy:Q", axis=alt.Axis(format="%"), scale=alt.Scale(zero=False), title="accuracy"))
    points = base.mark_point(size=90, filled=True).encode(
        color=alt.Color("label:N", title=None),
        tooltip=["label", alt.Tooltip("accuracy:Q", format=".1%"), alt.Tooltip("cost_per_1000_photos_usd:Q",
                                                                                format=".3f"), "photos_per_s"])
    names = base.mark_text(align="left", dx=7, fontSize=10).encode(text="label:N")
    layers = [points, names]
    if _has(df, "accuracy_lo", "accuracy_hi"):
        layers.insert(0, base.mark_rule(color="#868e96").encode(y=alt.Y("accuracy_lo:Q", title="accuracy"),
                                                                y2=alt.Y2("accuracy_hi:Q", title="accuracy")))
    return alt.layer(*layers).properties(width=WIDTH - 120, height=280, title=title)


def limit_trace(trace: pl.DataFrame, title: str = "In-flight limit over time") -> alt.Chart | None:
    if not trace.height:
        return None
    return alt.Chart(trace).mark_line(interpolate="step-after", point=True).encode(
        x=alt.X("t:Q", title="seconds since the model started"), y=alt.Y("limit:Q", title="in-flight limit"),
        color=alt.Color("label:N", title=None), tooltip=["label", "t", "limit"],
    ).properties(width=WIDTH, height=220, title=title)


def latency_box(lat: pl.DataFrame, title: str = "Latency by model") -> alt.Chart | None:
    if not lat.height:
        return None
    return alt.Chart(lat).mark_boxplot(extent=1.5, size=14).encode(
        x=alt.X("latency_s:Q", title="seconds"), y=alt.Y("label:N", title=None),
        color=alt.Color("label:N", legend=None),
    ).properties(width=WIDTH - 160, height=_height(lat, "label"), title=title)


def latency_vs_in_flight(binned: pl.DataFrame, title: str = "Latency against requests in flight"
                         ) -> alt.Chart | None:
    if not binned.height:
        return None
    long = binned.rename({"p50_s": "p50", "p95_s": "p95"}).unpivot(
        index=["label", "in_flight_mid", "in_flight_lo", "in_flight_hi", "n"], on=["p50", "p95"],
        variable_name="quantile", value_name="latency_s")
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("in_flight_mid:Q", title="requests in flight when sent"), y=alt.Y("latency_s:Q", title="seconds"),
        color=alt.Color("label:N", title=None), strokeDash=alt.StrokeDash("quantile:N", title=None),
        tooltip=["label", "quantile", "in_flight_lo", "in_flight_hi", "n", alt.Tooltip("latency_s:Q", format=".3f")],
    ).properties(width=WIDTH, height=240, title=title)


def pairs_heatmap(pairs: pl.DataFrame, title: str = "Accuracy difference (row minus column)") -> alt.Chart | None:
    if not pairs.height:
        return None
    df = pairs.with_columns(pp=(pl.col("accuracy_diff") * 100).round(1))
    tooltip = ["a", "b", alt.Tooltip("accuracy_diff:Q", format="+.1%"), alt.Tooltip("mcnemar_p:Q", format=".3g"),
               "both_answered", "a_only_right", "b_only_right"]
    tooltip += _ci_tooltip(df, "+.1%")
    base = alt.Chart(df).encode(x=alt.X("b:N", title=None, axis=alt.Axis(labelAngle=-30)),
                                y=alt.Y("a:N", title=None))
    rect = base.mark_rect().encode(
        color=alt.Color("accuracy_diff:Q", scale=alt.Scale(scheme="redblue", domainMid=0),
                        legend=alt.Legend(format="+%")), tooltip=tooltip)
    text = base.mark_text(fontSize=10).encode(text=alt.Text("pp:Q", format="+.1f"))
    return (rect + text).properties(width=max(200, 70 * df["b"].n_unique()), height=_height(df, "a", 60),
                                    title=title)


def reliability_diagram(rel: pl.DataFrame, title: str = "Reliability: stated P(hot dog) against the share of hot dogs"
                        ) -> alt.Chart | None:
    """One line per model through its bins (10 equal-width bins of P(hot dog)), points sized by photos; the
    diagonal is perfect calibration: above it the model understates, below it overstates."""
    if not rel.height:
        return None
    axis = alt.Scale(domain=[0, 1])
    diagonal = alt.Chart(pl.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]})).mark_line(
        color="#adb5bd", strokeDash=[4, 4]).encode(x=alt.X("x:Q", scale=axis), y=alt.Y("y:Q", scale=axis))
    base = alt.Chart(rel).encode(
        x=alt.X("mean_p:Q", scale=axis, title="stated P(hot dog), mean of the bin"),
        y=alt.Y("frac_pos:Q", scale=axis, title="share that are hot dogs"),
        color=alt.Color("label:N", title=None))
    tooltip = ["label", alt.Tooltip("lo:Q", format=".1f", title="bin from"), alt.Tooltip("hi:Q", format=".1f",
               title="bin to"), "n", alt.Tooltip("mean_p:Q", format=".3f"), alt.Tooltip("frac_pos:Q", format=".3f")]
    lines = base.mark_line()
    points = base.mark_point(filled=True).encode(size=alt.Size("n:Q", title="photos"), tooltip=tooltip)
    return alt.layer(diagonal, lines, points).properties(width=360, height=360, title=title)


def _matrix(df: pl.DataFrame, value: str, title: str, fmt: str, domain: list[float], scheme: str,
            tooltip: list) -> alt.Chart | None:
    df = df.filter(pl.col(value).is_not_null()) if df.height else df
    if not df.height:
        return None
    base = alt.Chart(df).encode(x=alt.X("b:N", title=None, axis=alt.Axis(labelAngle=-30)),
                                y=alt.Y("a:N", title=None))
    rect = base.mark_rect().encode(color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme=scheme, domain=domain),
                                                   title=None), tooltip=tooltip)
    text = base.mark_text(fontSize=10).encode(text=alt.Text(f"{value}:Q", format=fmt))
    return (rect + text).properties(width=max(200, 70 * df["b"].n_unique()), height=_height(df, "a", 60),
                                    title=title)


def kappa_matrix(agree: pl.DataFrame, title: str = "Cohen's kappa of the verdicts (1: the same answers, "
                                                   "0: as by chance)") -> alt.Chart | None:
    tooltip = ["a", "b", alt.Tooltip("kappa:Q", format=".3f"), alt.Tooltip("kappa_lo:Q", format=".3f"),
               alt.Tooltip("kappa_hi:Q", format=".3f"), "photos"]
    return _matrix(agree, "kappa", title, ".2f", [-1, 1], "blueorange", tooltip)


def error_overlap_matrix(agree: pl.DataFrame, title: str = "Error consistency (kappa of right/wrong: 0 = mistakes "
                                                           "as independent as chance)") -> alt.Chart | None:
    tooltip = ["a", "b", alt.Tooltip("error_consistency:Q", format=".3f"),
               alt.Tooltip("both_wrong:Q", format=".1%", title="both wrong"),
               alt.Tooltip("independent:Q", format=".1%", title="if independent"),
               alt.Tooltip("ratio:Q", format=".2f", title="ratio"), "photos"]
    return _matrix(agree, "error_consistency", title, ".2f", [-1, 1], "purpleorange", tooltip)


def conditions_cost_accuracy(cond: pl.DataFrame, title: str = "Cost against accuracy, by condition"
                             ) -> alt.Chart | None:
    """One panel per model: its conditions by USD per photo and accuracy (with the 95% interval), the
    cost-accuracy frontier drawn through the conditions on it (filled), the others hollow."""
    df = cond.filter(pl.col("accuracy").is_not_null() & pl.col("usd_per_photo").is_not_null()) \
        if cond.height else cond
    if not df.height:
        return None
    df = df.with_columns(on_frontier=pl.when(pl.col("frontier")).then(pl.lit("on the frontier"))
                         .otherwise(pl.lit("dominated")))
    x = alt.X("usd_per_photo:Q", title="USD per photo", scale=alt.Scale(zero=False),
              axis=alt.Axis(format="$.3~g", labelAngle=-30))
    y = alt.Y("accuracy:Q", axis=alt.Axis(format="%"), scale=alt.Scale(zero=False), title="accuracy")
    base = alt.Chart().encode(x=x, y=y)
    tooltip = ["condition", "spec", alt.Tooltip("accuracy:Q", format=".1%"),
               alt.Tooltip("usd_per_photo:Q", format="$.4g", title="USD per photo"),
               alt.Tooltip("prompt_tokens_per_photo:Q", format=".1f", title="prompt tokens per photo"),
               alt.Tooltip("vs_reference:Q", format="+.1%", title="minus the reference"),
               alt.Tooltip("mcnemar_p:Q", format=".3g", title="McNemar p"), "on_frontier"]
    layers = []
    if _has(df, "accuracy_lo", "accuracy_hi"):
        layers.append(base.mark_rule(color="#adb5bd").encode(y=alt.Y("accuracy_lo:Q", title="accuracy"),
                                                             y2=alt.Y2("accuracy_hi:Q")))
    layers.append(base.mark_line(color="#2b8a3e", strokeDash=[4, 3]).encode(order="usd_per_photo:Q")
                  .transform_filter(alt.datum.frontier))
    layers.append(base.mark_point(size=90, strokeWidth=2).encode(
        color=alt.Color("condition:N", title="condition"),
        fill=alt.condition(alt.datum.frontier, alt.Color("condition:N", legend=None), alt.value("white")),
        tooltip=tooltip))
    layers.append(base.mark_text(align="left", dx=7, fontSize=10).encode(text="condition:N"))
    return alt.layer(*layers, data=df).properties(width=260, height=200).facet(
        facet=alt.Facet("label:N", title=None), columns=2).resolve_scale(x="independent", y="independent") \
        .properties(title=alt.TitleParams(title, subtitle="filled: on the model's cost-accuracy frontier (dashed)"))
