import pytest

from support.tables import jpeg_bytes, make_rows, write_table
from hotdogbench_core.store.dataset import DatasetError, cache_path, load_dataset, resolve_input, sniff_image


def test_loads_labels_and_streams_bytes(small_table):
    ds = load_dataset(small_table)
    assert len(ds) == 16
    assert ds.categories() == {"hot_dog": 5, "magritte": 1, "sandwich": 5, "taco": 5}
    assert [p.id for p in ds.photos] == sorted(p.id for p in ds.photos)
    bonus = [p for p in ds.photos if not p.scored]
    assert [b.id for b in bonus] == [1001]
    streamed = list(ds.stream(batch=4))
    assert {p.id for p in streamed} == {p.id for p in ds.photos}
    assert all(p.image == jpeg_bytes(p.id) for p in streamed)
    assert [p.id for p in ds.stream(ids={2, 7})] == [2, 7]
    assert len(ds.sha256) == 64


def test_scored_column_optional(tmp_path):
    rows = [{k: v for k, v in r.items() if k not in ("scored", "open_images_id")} for r in make_rows(extras=0)]
    ds = load_dataset(write_table(tmp_path / "t.parquet", rows))
    assert all(p.scored for p in ds.photos) and all(p.open_images_id is None for p in ds.photos)


def test_missing_column_named(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "category"} for r in make_rows()]
    with pytest.raises(DatasetError, match="missing required column.*category"):
        load_dataset(write_table(tmp_path / "t.parquet", rows))


def test_wrong_type_named(tmp_path):
    rows = make_rows()
    types = {"id": "BIGINT", "image": "VARCHAR", "is_hot_dog": "BOOLEAN", "category": "VARCHAR"}
    for r in rows:
        r["image"] = "not bytes"
    with pytest.raises(DatasetError, match="column image has type VARCHAR"):
        load_dataset(write_table(tmp_path / "t.parquet", rows, types))


def test_duplicate_ids_named(tmp_path):
    rows = make_rows()
    rows[3]["id"] = rows[1]["id"]
    with pytest.raises(DatasetError, match=r"duplicate id\(s\) 2"):
        load_dataset(write_table(tmp_path / "t.parquet", rows))


def test_empty_table(tmp_path):
    with pytest.raises(DatasetError, match="empty"):
        load_dataset(write_table(tmp_path / "t.parquet", []))


def test_non_image_bytes_named(tmp_path):
    rows = make_rows()
    rows[4]["image"] = b"GIF89a...."
    rows[6]["image"] = b"%PDF-1.4"
    with pytest.raises(DatasetError, match=r"2 image\(s\) are not JPEG, PNG or WebP.*ids 5, 7"):
        load_dataset(write_table(tmp_path / "t.parquet", rows))


def test_png_and_webp_accepted(tmp_path):
    rows = make_rows(extras=0)
    rows[0]["image"] = b"\x89PNG\r\n\x1a\n" + b"x" * 20
    rows[1]["image"] = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"x" * 20
    assert len(load_dataset(write_table(tmp_path / "t.parquet", rows))) == 15


def test_null_label_named(tmp_path):
    rows = make_rows()
    rows[2]["is_hot_dog"] = None
    with pytest.raises(DatasetError, match=r"is_hot_dog has 1 null.*ids 3"):
        load_dataset(write_table(tmp_path / "t.parquet", rows))


def test_missing_file_and_not_parquet(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(tmp_path / "nope.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_text("hello")
    with pytest.raises(DatasetError, match="not a readable parquet"):
        load_dataset(bad)


def test_sniff():
    assert sniff_image(b"\xff\xd8\xff\xe0") == "jpeg"
    assert sniff_image(b"GIF89a") is None


def test_unreachable_url_says_so_and_points_at_sample(tmp_path):
    with pytest.raises(DatasetError, match="input: could not download.*bundled sample"):
        resolve_input("http://127.0.0.1:9/hotdogbench.parquet", tmp_path / "data", quiet=True)
    assert not list((tmp_path / "data").rglob("*.part*"))


def test_url_downloaded_once_into_data_dir(tmp_path, small_table):
    import functools
    import http.server
    import threading

    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Handler, directory=str(small_table.parent)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_port}/{small_table.name}"
        data = tmp_path / "cache"
        ds = load_dataset(url, data, quiet=True)
        assert ds.path == cache_path(url, data) and len(ds) == 16
        assert ds.path.read_bytes() == small_table.read_bytes()
        load_dataset(url, data, quiet=True)
        assert hits == [f"/{small_table.name}"]  # cached: read locally the second time
        assert not list(data.rglob("*.part*"))
    finally:
        srv.shutdown()


@pytest.mark.parametrize("kind, ids", [("UBIGINT", [1, 2 ** 63, 2 ** 64 - 1]), ("UBIGINT", [2 ** 63 - 1, 2 ** 63])])  # (parquet has no 128-bit ints: duckdb writes HUGEINT as DOUBLE, refused by type)
def test_ids_that_do_not_fit_in_int64_are_refused_at_load(tmp_path, kind, ids):
    rows = make_rows(n_per_cat=1, extras=0)[: len(ids)]
    for r, i in zip(rows, ids):
        r["id"] = i
    types = {"id": kind, "image": "BLOB", "is_hot_dog": "BOOLEAN", "category": "VARCHAR"}
    path = write_table(tmp_path / "wide.parquet", [{k: r[k] for k in types} for r in rows], types=types)
    wide = [i for i in ids if not -2 ** 63 <= i < 2 ** 63]
    with pytest.raises(DatasetError) as e:
        load_dataset(path)
    assert "column id" in str(e.value) and "signed 64-bit" in str(e.value)
    assert all(str(i) in str(e.value) for i in wide)
