"""build_dataset: folder of photos -> parquet in the dataset schema; and the committed data/sample.parquet."""
from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import duckdb
import pytest
from PIL import Image

from hotdogbench_core.store import build_dataset as bd
from hotdogbench_core.store.build_dataset import BuildReport, build_dataset

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample.parquet"
COLUMNS = {"id": "BIGINT", "image": "BLOB", "is_hot_dog": "BOOLEAN", "category": "VARCHAR", "scored": "BOOLEAN",
           "open_images_id": "VARCHAR", "source": "VARCHAR", "license": "VARCHAR"}


def image_bytes(seed: int, fmt: str = "JPEG") -> bytes:
    im = Image.new("RGB", (24, 16), ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


def put(folder: Path, rel: str, data: bytes | None = None, seed: int = 0) -> Path:
    p = folder / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(image_bytes(seed) if data is None else data)
    return p


def make_folder(root: Path, counts: dict[str, int]) -> Path:
    seed = 0
    for cat, n in counts.items():
        for k in range(n):
            seed += 1
            put(root, f"{cat}/{cat}_{k:02d}.jpg", seed=seed)
    return root


def rows(path: Path, where: str = "true") -> list[dict]:
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{path}') WHERE {where} ORDER BY id")
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def md5(s: str) -> str:
    return hashlib.md5(s.encode()).hexdigest()


# -- schema, content, determinism ---------------------------------------------------------------------------

def test_schema_types_and_values(tmp_path):
    folder = make_folder(tmp_path / "photos", {"hot_dog": 3, "taco": 2})
    (folder / "notes.txt").write_text("ignored")
    (folder / "taco" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (folder / "taco" / "README.txt").write_text("ignored too")
    report = build_dataset(folder, tmp_path / "out.parquet")
    assert isinstance(report, BuildReport)
    assert report.path == tmp_path / "out.parquet"
    assert report.per_category == {"hot_dog": 3, "taco": 2} and report.scored == 5
    assert report.short_categories == ["hot_dog", "taco"] and report.extras == 0  # both under 25
    types = {r[0]: r[1] for r in duckdb.sql(f"DESCRIBE SELECT * FROM '{report.path}'").fetchall()}
    assert types == COLUMNS
    for r in rows(report.path):
        f = folder / r["category"] / f"{r['open_images_id']}.jpg"
        assert r["image"] == f.read_bytes()  # the file's exact bytes
        assert r["is_hot_dog"] == (r["category"] == "hot_dog")
        assert r["scored"] is True and r["source"] is None and r["license"] is None


def test_png_webp_and_upper_case_extensions_accepted(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    put(folder, "taco/a.PNG", image_bytes(5, "PNG"))
    put(folder, "taco/b.webp", image_bytes(6, "WEBP"))
    put(folder, "taco/c.jpeg", image_bytes(7))
    report = build_dataset(folder, tmp_path / "o.parquet")
    assert report.per_category == {"hot_dog": 1, "taco": 3}
    got = {r["open_images_id"]: r["image"] for r in rows(report.path)}
    assert got["a"][:8] == b"\x89PNG\r\n\x1a\n" and got["b"][8:12] == b"WEBP"


def test_ids_follow_md5_of_stem_and_builds_are_byte_identical(tmp_path):
    folder = make_folder(tmp_path / "photos", {"hot_dog": 4, "taco": 3, "bun": 3})
    a = build_dataset(folder, tmp_path / "a.parquet").path
    copy = shutil.copytree(folder, tmp_path / "elsewhere" / "copy")
    b = build_dataset(copy, tmp_path / "b.parquet").path
    assert a.read_bytes() == b.read_bytes()
    got = [(r["id"], r["open_images_id"]) for r in rows(a)]
    stems = sorted((p.stem for p in folder.glob("*/*.jpg")), key=md5)
    assert got == list(enumerate(stems, 1))
    # adding a photo keeps the file deterministic (a rebuild of the new folder is identical too)
    put(folder, "taco/zzz.jpg", seed=99)
    assert build_dataset(folder, tmp_path / "c.parquet").path.read_bytes() == \
        build_dataset(folder, tmp_path / "d.parquet").path.read_bytes()


def test_written_atomically_and_failure_leaves_old_file(tmp_path, monkeypatch):
    folder = make_folder(tmp_path / "p", {"hot_dog": 2})
    out = tmp_path / "out" / "ds.parquet"  # parent is created
    build_dataset(folder, out)
    before = out.read_bytes()
    put(folder, "taco/x.jpg", seed=50)

    def boom(table, where, **kw):
        Path(where).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(bd.pq, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        build_dataset(folder, out)
    assert out.read_bytes() == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["ds.parquet"]  # no temp file left


# -- balancing -----------------------------------------------------------------------------------------------

def test_per_group_takes_first_in_stable_hash_order(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 6, "taco": 5, "bun": 2})
    report = build_dataset(folder, tmp_path / "o.parquet", per_group=3)
    assert report.per_category == {"bun": 2, "hot_dog": 3, "taco": 3}
    assert report.short_categories == ["bun"]
    kept = {r["open_images_id"] for r in rows(report.path)}
    for cat in ("hot_dog", "taco"):
        stems = sorted((p.stem for p in (folder / cat).glob("*.jpg")), key=lambda s: md5(s + "sample"))
        assert {s for s in kept if s.startswith(cat)} == set(stems[:3])
    assert [r["id"] for r in rows(report.path)] == list(range(1, 9))


def test_per_group_none_takes_everything(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 30, "taco": 2})
    report = build_dataset(folder, tmp_path / "o.parquet", per_group=None)
    assert report.per_category == {"hot_dog": 30, "taco": 2} and report.short_categories == []
    full = build_dataset(folder, tmp_path / "d.parquet")  # default 25
    assert full.per_category == {"hot_dog": 25, "taco": 2} and full.short_categories == ["taco"]


# -- extras --------------------------------------------------------------------------------------------------

def test_extras_unscored_from_1001_labelled_by_stem(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 2, "taco": 2})
    for i, name in enumerate(["zebra_hot_dog.jpg", "a_not_hot_dog.png", "magritte_hot_dog.jpg", "cake.jpg"]):
        put(folder, f"extras/{name}", image_bytes(70 + i, "PNG" if name.endswith("png") else "JPEG"))
    (folder / "extras" / "notes.txt").write_text("ignored")
    report = build_dataset(folder, tmp_path / "o.parquet")
    assert report.extras == 4 and report.per_category == {"hot_dog": 2, "taco": 2}
    got = [(r["id"], r["category"], r["is_hot_dog"], r["scored"]) for r in rows(report.path, "id > 1000")]
    assert got == [(1001, "a_not_hot_dog", False, False), (1002, "cake", False, False),
                   (1003, "magritte_hot_dog", True, False), (1004, "zebra_hot_dog", True, False)]
    assert [r["id"] for r in rows(report.path, "scored")] == [1, 2, 3, 4]


def test_extras_labels_csv(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    put(folder, "extras/magritte.jpg", seed=1)
    put(folder, "extras/pun_dog.jpg", seed=2)
    put(folder, "extras/other_hot_dog.jpg", seed=3)  # no row: falls back to the stem rule
    (folder / "extras" / "labels.csv").write_text(
        "file,category,is_hot_dog\nmagritte.jpg,magritte,True\nextras/pun_dog.jpg,pun,false\n")
    report = build_dataset(folder, tmp_path / "o.parquet")
    got = [(r["id"], r["category"], r["is_hot_dog"]) for r in rows(report.path, "NOT scored")]
    assert got == [(1001, "magritte", True), (1002, "other_hot_dog", True), (1003, "pun", False)]


def test_extras_labels_csv_bad_value(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    put(folder, "extras/m.jpg")
    (folder / "extras" / "labels.csv").write_text("file,category,is_hot_dog\nm.jpg,magritte,maybe\n")
    with pytest.raises(ValueError, match=r"labels\.csv.*m\.jpg.*maybe"):
        build_dataset(folder, tmp_path / "o.parquet")
    (folder / "extras" / "labels.csv").write_text("file,label\nm.jpg,1\n")
    with pytest.raises(ValueError, match=r"labels\.csv: missing column\(s\) category, is_hot_dog"):
        build_dataset(folder, tmp_path / "o.parquet")


# -- sources -------------------------------------------------------------------------------------------------

def test_sources_csv(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 2, "taco": 1})
    put(folder, "extras/m.jpg", seed=9)
    (folder / "sources.csv").write_text(
        "file,source,license\n"
        'hot_dog/hot_dog_00.jpg,"Noto Color Emoji U+1F32D, via Debian",OFL-1.1\n'
        "taco/taco_00.jpg,Twemoji,CC-BY-4.0\n"
        "extras/m.jpg,OpenMoji,CC-BY-SA-4.0\n"
        "taco/gone.jpg,nobody,none\n")
    report = build_dataset(folder, tmp_path / "o.parquet")
    got = {r["open_images_id"]: (r["source"], r["license"]) for r in rows(report.path)}
    assert got == {"hot_dog_00": ("Noto Color Emoji U+1F32D, via Debian", "OFL-1.1"),
                   "hot_dog_01": (None, None), "taco_00": ("Twemoji", "CC-BY-4.0"), "m": ("OpenMoji", "CC-BY-SA-4.0")}


def test_sources_csv_missing_column(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    (folder / "sources.csv").write_text("file,source\nhot_dog/hot_dog_00.jpg,x\n")
    with pytest.raises(ValueError, match=r"sources\.csv: missing column\(s\) license"):
        build_dataset(folder, tmp_path / "o.parquet")


# -- errors --------------------------------------------------------------------------------------------------

def test_error_missing_folder(tmp_path):
    with pytest.raises(ValueError, match=r"nope: no such folder"):
        build_dataset(tmp_path / "nope", tmp_path / "o.parquet")


def test_error_no_category_folders(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "sources.csv").write_text("file,source,license\n")
    put(tmp_path / "p", "extras/m.jpg")
    with pytest.raises(ValueError, match=r"p: no category folders"):
        build_dataset(tmp_path / "p", tmp_path / "o.parquet")


def test_error_no_hot_dog_folder(tmp_path):
    folder = make_folder(tmp_path / "p", {"taco": 2, "bun": 1})
    with pytest.raises(ValueError, match=r"no hot_dog/ folder.*positive class.*found: bun, taco"):
        build_dataset(folder, tmp_path / "o.parquet")


def test_error_output_not_parquet(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    with pytest.raises(ValueError, match=r"out\.csv: the output must be a \.parquet file"):
        build_dataset(folder, tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


def test_error_image_extension_but_not_an_image(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 2})
    put(folder, "taco/fake.jpg", b"<html>404 not found</html>")
    with pytest.raises(ValueError, match=r"taco/fake\.jpg: has an image extension but its bytes are not"):
        build_dataset(folder, tmp_path / "o.parquet")


def test_error_empty_file_and_bad_extra(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 2})
    put(folder, "extras/empty.png", b"")
    with pytest.raises(ValueError, match=r"extras/empty\.png: has an image extension"):
        build_dataset(folder, tmp_path / "o.parquet")


def test_error_category_folder_without_images(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 2})
    (folder / "taco").mkdir()
    (folder / "taco" / "notes.txt").write_text("photos to come")
    with pytest.raises(ValueError, match=r"p/taco: category folder has no images"):
        build_dataset(folder, tmp_path / "o.parquet")


def test_error_duplicate_stems(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    put(folder, "taco/hot_dog_00.png", image_bytes(3, "PNG"))
    with pytest.raises(ValueError, match=r"two photos named 'hot_dog_00'"):
        build_dataset(folder, tmp_path / "o.parquet")


def test_error_scored_ids_would_reach_extras(tmp_path, monkeypatch):
    monkeypatch.setattr(bd, "FIRST_EXTRA_ID", 3)
    folder = make_folder(tmp_path / "p", {"hot_dog": 3})
    assert build_dataset(folder, tmp_path / "o.parquet").scored == 3  # no extras: no clash
    put(folder, "extras/m.jpg")
    with pytest.raises(ValueError, match=r"3 scored photos would reach the extras' ids \(from 3\)"):
        build_dataset(folder, tmp_path / "o.parquet")


def test_error_per_group_below_one(tmp_path):
    folder = make_folder(tmp_path / "p", {"hot_dog": 1})
    with pytest.raises(ValueError, match="per_group must be at least 1"):
        build_dataset(folder, tmp_path / "o.parquet", per_group=0)


# -- the committed sample ------------------------------------------------------------------------------------

def test_committed_sample():
    assert SAMPLE.exists(), "data/sample.parquet is missing: run scripts/make_sample.py"
    assert SAMPLE.stat().st_size <= 3 * 1024 * 1024
    types = {r[0]: r[1] for r in duckdb.sql(f"DESCRIBE SELECT * FROM '{SAMPLE}'").fetchall()}
    assert types == COLUMNS
    got = rows(SAMPLE)
    ids = [r["id"] for r in got]
    assert len(ids) == len(set(ids))
    assert all(r["image"][:3] == b"\xff\xd8\xff" for r in got), "every image is a JPEG"
    scored = [r for r in got if r["scored"]]
    assert [r["id"] for r in scored] == list(range(1, len(scored) + 1))
    assert all(r["source"] and r["license"] for r in scored)
    cats = {r["category"] for r in scored}
    assert "hot_dog" in cats and len(cats - {"hot_dog"}) >= 4
    assert all(r["is_hot_dog"] == (r["category"] == "hot_dog") for r in scored)
    assert all(r["id"] > 1000 for r in got if not r["scored"])
