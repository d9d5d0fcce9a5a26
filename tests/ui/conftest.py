import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """item.failed_call: the test itself failed (the browser tests then save a screenshot of their pages)."""
    report = yield
    if report.when == "call":
        item.failed_call = report.failed
    return report
