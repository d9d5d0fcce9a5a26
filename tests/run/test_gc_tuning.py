"""The collector is tuned only while runs are going, and put back exactly as it was, however runs nest."""
import gc

import pytest

from hotdogbench_core.run.gc_tuning import FULL_COLLECTION_EVERY, tuned_for_run


@pytest.fixture
def threshold():
    saved = gc.get_threshold()
    gc.set_threshold(500, 7, 3)
    yield (500, 7, 3)
    gc.set_threshold(*saved)


def test_tuned_during_a_run_and_restored_after(threshold):
    before_frozen = gc.get_freeze_count()
    with tuned_for_run():
        assert gc.get_threshold() == (500, 7, 3 * FULL_COLLECTION_EVERY)
        assert gc.get_freeze_count() > before_frozen  # what existed before the run is skipped by collections
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() == before_frozen


def test_nested_and_interleaved_runs_restore_once_the_last_ends(threshold):
    a, b = tuned_for_run(), tuned_for_run()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)  # parallel runs end in any order
    assert gc.get_threshold() == (500, 7, 3 * FULL_COLLECTION_EVERY)
    b.__exit__(None, None, None)
    assert gc.get_threshold() == threshold


def test_restored_when_the_run_fails(threshold):
    with pytest.raises(RuntimeError):
        with tuned_for_run():
            raise RuntimeError("boom")
    assert gc.get_threshold() == threshold and gc.get_freeze_count() == 0


def test_a_programs_own_freeze_is_left_alone(threshold):
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with tuned_for_run():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen  # not unfrozen by the run
    finally:
        gc.unfreeze()
