"""Streaming photos straight from the parquet pages, whatever the row groups."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.tables import jpeg_bytes
from hotdogbench_core.store.dataset import DatasetError, load_dataset


def write(path, n, row_group_size, bad=()):
    ids = list(range(1, n + 1))
    images = [b"GIF89a" if i in bad else jpeg_bytes(i, size=1000) for i in ids]
    table = pa.table({"id": ids, "image": images, "is_hot_dog": [i % 3 == 0 for i in ids],
                      "category": ["hot_dog" if i % 3 == 0 else "taco" for i in ids]})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.mark.parametrize("row_group_size", [1, 7, 500])
def test_stream_yields_every_photo_in_file_order(tmp_path, row_group_size):
    ds = load_dataset(write(tmp_path / "t.parquet", 100, row_group_size))
    got = list(ds.stream(batch=8))
    assert [p.id for p in got] == list(range(1, 101))
    assert all(p.image == jpeg_bytes(p.id, size=1000) for p in got)
    assert [p.is_hot_dog for p in got] == [p.is_hot_dog for p in ds.photos]
    assert [p.id for p in ds.stream({5, 50, 99}, batch=8)] == [5, 50, 99]


def test_bad_images_found_across_row_groups(tmp_path):
    with pytest.raises(DatasetError, match=r"3 image\(s\) are not JPEG, PNG or WebP.*ids 2, 64, 90"):
        load_dataset(write(tmp_path / "t.parquet", 100, 7, bad={90, 2, 64}))


def test_large_binary_images_accepted(tmp_path):
    table = pa.table({"id": pa.array([1, 2]), "image": pa.array([jpeg_bytes(1), jpeg_bytes(2)], pa.large_binary()),
                      "is_hot_dog": [True, False], "category": ["hot_dog", "taco"]})
    pq.write_table(table, tmp_path / "t.parquet")
    ds = load_dataset(tmp_path / "t.parquet")
    assert [p.image for p in ds.stream()] == [jpeg_bytes(1), jpeg_bytes(2)]
