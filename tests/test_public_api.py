"""The package's public surface is small, sorted and deliberate: a name added or dropped fails here."""
import hotdogbench_core

EXPECTED = {"DatasetError", "LimitChanged", "ModelFinished", "ModelStarted", "PhotoDone", "RunResult", "RunSettings",
            "SimConfig", "Simulator", "__version__", "build_settings", "load_dataset", "load_run", "plan_run",
            "resolve_models", "run_models", "run_plan"}


def test_all_is_sorted_small_and_as_expected():
    names = hotdogbench_core.__all__
    assert names == sorted(names)
    assert set(names) == EXPECTED and len(names) == len(set(names))


def test_every_exported_name_resolves_and_nothing_else_is_public():
    for name in hotdogbench_core.__all__:
        assert getattr(hotdogbench_core, name) is not None
    public = {n for n in vars(hotdogbench_core) if not n.startswith("_")}
    subpackages = {"errors", "limit", "protocol", "report", "run", "sim", "stats", "store", "ui"}
    assert public - subpackages == EXPECTED - {"__version__"}


def test_the_console_script_points_at_the_cli():
    import importlib.metadata

    from hotdogbench_core.ui.cli import main

    (script,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "hotdogbench"]
    assert script.load() is main
