from pathlib import Path

import pytest

from support.tables import make_rows, write_table

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_table(tmp_path) -> Path:
    return write_table(tmp_path / "photos.parquet", make_rows())
