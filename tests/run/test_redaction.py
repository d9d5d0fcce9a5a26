"""The key and URL credentials are nowhere a run writes or prints, even when the server echoes them back."""
import json

import polars as pl
import pytest

from support.tables import make_rows, write_table
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.store.redact import MASK, Redactor, public_url, url_secrets
from hotdogbench_core.store.results import Result
from hotdogbench_core.ui.cli import main

SECRET = "sk-or-v1-REDACT-TEST-0123456789abcdef"
TOKEN = "qtok-SECRET-777-abcdef"
LEAKS = (SECRET, SECRET[:12], SECRET[-12:], TOKEN)  # the whole key, either half of it, the URL's token


def json_values(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from json_values(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from json_values(v)
    else:
        yield obj


def assert_nowhere(run_dir, *texts):
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert files
    for f in files:
        data = f.read_bytes()
        for leak in LEAKS:
            assert leak.encode() not in data, (f, leak)
        if f.suffix == ".parquet":  # decoded columns, not only the file's (compressed) bytes
            df = pl.read_parquet(f)
            for col in df.columns:
                for v in df[col].cast(pl.String).to_list():
                    assert not any(leak in (v or "") for leak in LEAKS), (f, col, v)
        if f.suffix == ".jsonl":
            for line in data.decode().splitlines():
                for v in json_values(json.loads(line)):
                    assert not any(leak in str(v) for leak in LEAKS), (f, v)
    for t in texts:
        assert not any(leak in t for leak in LEAKS)


@pytest.mark.parametrize("echo", ["error", "answer", "answer_cut"])
def test_an_echoing_server_over_http_leaves_no_key_anywhere(echo, tmp_path, capsys, monkeypatch):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=2))
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    cfg = SimConfig(seed=4, latency_s=0.0, echo_auth=echo)
    with Simulator(cfg, labels=labels_from_parquet(table), api_key=SECRET) as sim:
        base = sim.base_url
        code = main(["run", "--models", "openai/gpt-6-luna,typesafe/jev-1.14", "--input", str(table),
                     "--base-url", f"{base}/?token={TOKEN}", "--out", str(tmp_path / "out"), "--run", "r"])
        assert sim.stats.requests >= 14  # both models were asked over HTTP (the query token did not break the URL)
    out, err = capsys.readouterr()
    assert code == (6 if echo == "error" else 0), err  # every photo a 400: no answer at all (exit 6)
    run_dir = tmp_path / "out" / "r"
    frame = pl.read_parquet(run_dir / "openai__gpt-6-luna.parquet")
    seen = " ".join(str(v) for c in ("raw", "error", "provider") for v in frame[c].to_list())
    assert MASK in seen  # the echo reached the results, masked
    if echo != "error":
        assert frame["pred"].null_count() == 0  # the verdicts were still read
    assert_nowhere(run_dir, out, err)
    session = [json.loads(x) for x in (run_dir / "journal" / "openai__gpt-6-luna.jsonl").read_text().splitlines()
               if '"type":"session"' in x][-1]
    assert session["settings"]["base_url"] == base + "/"


def test_a_base_url_with_a_password_is_refused_without_showing_it(tmp_path, capsys):
    code = main(["run", "--models", "openai/gpt-6-luna", "--input", str(tmp_path / "none.parquet"),
                 "--base-url", f"http://user:{SECRET}@127.0.0.1:9", "--out", str(tmp_path / "out")])
    _, err = capsys.readouterr()
    assert code == 2 and "--base-url: holds a user name or password" in err
    assert SECRET not in err and not (tmp_path / "out").exists()


def test_the_redactor_masks_every_form_of_a_secret():
    r = Redactor([SECRET, "abc", None])  # "abc": too short to look for in free text
    assert r.text(f"a {SECRET} b") == f"a {MASK} b"
    assert r.text("abc stays") == "abc stays"
    assert r.bytes(json.dumps({"k": SECRET}).encode()) == json.dumps({"k": MASK}).encode()
    slashed = Redactor(["sk/with/slash-123"])
    assert MASK in slashed.text(json.dumps("sk/with/slash-123").replace("/", "\\/"))
    assert MASK in slashed.text("sk%2Fwith%2Fslash-123")
    res = Result(id=1, open_images_id=None, category="x", is_hot_dog=True, raw=f"said {SECRET}",
                 error=f"400: {SECRET}", provider=SECRET, retries=(f"t{SECRET}",))
    r.result(res)
    assert SECRET not in repr(res)
    assert not Redactor([]) and Redactor.for_settings(type("S", (), {"api_key": SECRET, "base_url": "http://h"}))


def test_url_credentials_are_found_and_public_urls_hold_none():
    url = f"https://me:{SECRET}@example.test:8443/api?token={TOKEN}&v=2#frag"
    assert {SECRET, TOKEN, "me:" + SECRET} <= set(url_secrets(url))
    assert public_url(url) == "https://example.test:8443/api"
    assert public_url("http://h:notaport/x") == "http://"
