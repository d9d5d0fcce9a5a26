"""hotdogbench: ask vision-language models "is the food in this photo a hot dog?" and score the answers.

The public surface: load a photo table, choose models, plan and run a benchmark against OpenRouter, any
OpenAI-compatible server or the bundled simulator, follow it through events, and read a finished run back.
Everything else lives in the subpackages (see docs/architecture.md).
"""
from ._version import __version__
from .protocol.models import resolve_models
from .report.runs import load_run
from .run.events import LimitChanged, ModelFinished, ModelStarted, PhotoDone
from .run.plan import plan_run, run_plan
from .run.session import RunResult, run_models
from .run.settings import RunSettings, build_settings
from .sim.app import Simulator
from .sim.config import SimConfig
from .store.dataset import DatasetError, load_dataset

__all__ = [
    "DatasetError",
    "LimitChanged",
    "ModelFinished",
    "ModelStarted",
    "PhotoDone",
    "RunResult",
    "RunSettings",
    "SimConfig",
    "Simulator",
    "__version__",
    "build_settings",
    "load_dataset",
    "load_run",
    "plan_run",
    "resolve_models",
    "run_models",
    "run_plan",
]
