"""hotdogbench: ask vision-language models "is the food in this photo a hot dog?" and score the answers.

The public surface is small: load a dataset, choose models, run them against OpenRouter (or the bundled
simulator), and read the results back.
"""
from ._version import __version__

from .limit.adaptive import AdaptiveLimiter
from .protocol.answers import classify
from .protocol.chat import QUESTION, SCHEMA, parse_verdict
from .protocol.request import body_for
from .store.dataset import DATA_URL, SAMPLE, Dataset, DatasetError, load_dataset
from .run.keys import find_key
from .limit.aimd import AIMDLimiter, LimitChange
from .protocol.models import MODELS, PRESETS, resolve_models
from .store.results import Result, summarize
from .run.runner import (DEFAULT_BASE_URL, LimitChanged, ModelFinished, ModelRun, ModelStarted, PhotoDone, RunError,
                     RunSettings)
from .run.session import RunResult, run_models, run_models_sync

__all__ = [
    "__version__", "classify", "parse_verdict", "DATA_URL", "SAMPLE", "Dataset", "DatasetError", "load_dataset",
    "find_key", "AdaptiveLimiter", "AIMDLimiter", "LimitChange", "MODELS", "PRESETS", "QUESTION", "SCHEMA", "body_for",
    "resolve_models", "Result", "summarize", "DEFAULT_BASE_URL", "LimitChanged", "ModelFinished", "ModelRun",
    "ModelStarted", "PhotoDone", "RunError", "RunSettings", "RunResult", "run_models", "run_models_sync",
]
