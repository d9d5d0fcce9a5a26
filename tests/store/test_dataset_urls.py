"""URL inputs: one cache entry per whole URL, checked to be a photo table before it enters the cache."""
import http.server
import threading
from contextlib import contextmanager

import pytest

from support.tables import make_rows, write_table
from hotdogbench_core.store.dataset import SAMPLE, DatasetError, cache_path, load_dataset, resolve_input


@contextmanager
def serve(routes):
    """A real loopback HTTP server: path -> (status, content type, body)."""
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            hits.append(self.path)
            status, ctype, body = routes.get(self.path.split("?")[0], (404, "text/plain", b"no"))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", hits
    finally:
        srv.shutdown()
        srv.server_close()


PARQUET = "application/vnd.apache.parquet"


def test_an_html_page_served_with_200_never_reaches_the_cache(tmp_path):
    page = b"<!doctype html><html><body>Please sign in</body></html>"
    with serve({"/photos.parquet": (200, "text/html; charset=utf-8", page)}) as (base, hits):
        url = base + "/photos.parquet"
        for attempt in range(2):  # and the next run asks again instead of failing on a cached page
            with pytest.raises(DatasetError) as e:
                resolve_input(url, tmp_path / "data", quiet=True)
            msg = str(e.value)
            assert url in msg and "not a parquet file" in msg and "text/html" in msg and "<!doctype html>" in msg
        assert len(hits) == 2
    assert not [p for p in (tmp_path / "data").rglob("*") if p.is_file()]  # nothing cached, no .part left


def test_a_parquet_without_the_photo_columns_is_refused_before_the_cache(tmp_path):
    other = write_table(tmp_path / "other.parquet", [{"x": 1}], types={"x": "BIGINT"})
    with serve({"/t.parquet": (200, PARQUET, other.read_bytes())}) as (base, _):
        with pytest.raises(DatasetError, match=r"without the column\(s\) id, image, is_hot_dog, category"):
            resolve_input(base + "/t.parquet", tmp_path / "data", quiet=True)
    assert not cache_path(base + "/t.parquet", tmp_path / "data").exists()


def test_a_url_named_like_the_sample_is_downloaded_not_the_bundled_sample(tmp_path, monkeypatch):
    table = write_table(tmp_path / "served.parquet", make_rows(n_per_cat=2))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sample.parquet").write_bytes(SAMPLE.read_bytes())  # a local file of that name
    with serve({"/sample.parquet": (200, PARQUET, table.read_bytes())}) as (base, hits):
        ds = load_dataset(base + "/sample.parquet", quiet=True)
    assert hits == ["/sample.parquet"] and len(ds) == 7  # the served table (7 rows), not the sample's 66
    assert ds.path.read_bytes() == table.read_bytes() and ds.path.parent.name == "downloads"


def test_two_hosts_serving_one_file_name_get_two_cache_entries(tmp_path):
    a = write_table(tmp_path / "a.parquet", make_rows(n_per_cat=1))
    b = write_table(tmp_path / "b.parquet", make_rows(n_per_cat=3))
    with serve({"/hotdogbench.parquet": (200, PARQUET, a.read_bytes())}) as (base_a, _), \
            serve({"/hotdogbench.parquet": (200, PARQUET, b.read_bytes())}) as (base_b, _):
        da = load_dataset(base_a + "/hotdogbench.parquet", tmp_path / "data", quiet=True)
        db = load_dataset(base_b + "/hotdogbench.parquet", tmp_path / "data", quiet=True)
        dq = load_dataset(base_a + "/hotdogbench.parquet?v=2", tmp_path / "data", quiet=True)  # another URL
    assert len({da.path, db.path, dq.path}) == 3
    assert (len(da), len(db)) == (4, 10)
    assert da.path.name.endswith("-hotdogbench.parquet")
