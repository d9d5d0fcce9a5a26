"""Conditions: the named variants of a request a run compares (image size and JPEG quality, question text,
provider routing). A run is models x conditions x repeats.

A condition is a name and a spec. The spec has up to four parts, written the same way on the command line
(`--condition NAME=SPEC`) and in a TOML or JSON file (`--conditions FILE`):

    px:512                      the photo re-encoded with its longest side at most 512 px (never enlarged)
    q:80                        the photo re-encoded as JPEG at quality 80 (1..100)
    prompt:"Hot dog? JSON."     the question text instead of the reference question (chat: the text part;
                                decisions: the question's instructions)
    provider:only=Cloudflare    OpenRouter's provider object: only=A|B, order=A|B, allow_fallbacks=false,
                                quantizations=fp8|bf16 (several provider: items add up)

Items are separated by commas; a prompt with commas is quoted ("..." with \\" and \\\\ inside). The condition
`reference` has the empty spec: the reference question and photos, byte for byte, the run every run was before
conditions. A run given no condition runs `reference` alone and writes exactly what it always wrote.
"""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FieldError

REFERENCE = "reference"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")  # also a file-name part: no '@', '/', spaces
PX_RANGE = (16, 8192)
Q_RANGE = (1, 100)
PROMPT_CHARS = 4000
KEYS = ("px", "q", "prompt", "provider")
PROVIDER_LISTS = ("only", "order", "quantizations")
PROVIDER_KEYS = ("only", "order", "allow_fallbacks", "quantizations")  # the order they are written in
# OpenRouter's provider.quantizations values
QUANTIZATIONS = ("int4", "int8", "fp4", "fp6", "fp8", "fp16", "bf16", "fp32", "unknown")


class ConditionError(FieldError):
    """A condition that cannot be used: the message names the condition and the part of its spec."""

    field = "conditions"


@dataclass(frozen=True)
class Condition:
    name: str = REFERENCE
    px: int | None = None  # longest side, in pixels
    q: int | None = None  # JPEG quality
    prompt: str | None = None  # the question text
    provider: dict | None = field(default=None)  # OpenRouter's provider object (keys in PROVIDER_KEYS order)

    @property
    def is_reference(self) -> bool:
        """The reference condition: named `reference`, nothing changed. Its files are a plain run's."""
        return self.name == REFERENCE and not self.spec()

    @property
    def transforms(self) -> bool:
        """Is the photo re-encoded?"""
        return self.px is not None or self.q is not None

    @property
    def prompt_only(self) -> bool:
        """Does it change at most the question (the reference counts): a member of the model's prompt spread."""
        return not self.transforms and not self.provider

    def spec(self) -> dict:
        """The canonical spec: the keys that are set, in KEYS order (journal headers and the manifest hold it)."""
        out: dict[str, Any] = {}
        for k in KEYS:
            v = getattr(self, k)
            if v is not None:
                out[k] = dict(v) if isinstance(v, dict) else v
        return out

    def text(self) -> str:
        """The spec as it is written on the command line: px:512,q:80,prompt:"...",provider:only=A|B."""
        items = []
        for k, v in self.spec().items():
            if k == "prompt":
                items.append("prompt:" + json.dumps(v, ensure_ascii=False))
            elif k == "provider":
                for pk, pv in v.items():
                    items.append(f"provider:{pk}=" + ("|".join(pv) if isinstance(pv, list) else
                                                      str(pv).lower()))
            else:
                items.append(f"{k}:{v}")
        return ",".join(items)

    def header(self) -> dict:
        """What a journal header records of it (absent for the reference: its journals are a plain run's)."""
        return {"name": self.name, "spec": self.spec()}

    def params(self, params: dict) -> dict:
        """The model's extra body params with this condition's provider object merged over its own."""
        if not self.provider:
            return params
        return {**params, "provider": {**(params.get("provider") or {}), **self.provider}}

    def __str__(self) -> str:
        return f"{self.name}={self.text()}" if self.spec() else self.name


REFERENCE_CONDITION = Condition()


# -- reading a spec ---------------------------------------------------------------------------------------
def _fail(where: str, problem: str, field_name: str = "conditions"):
    raise ConditionError(f"{where}: {problem}", field_name)


def _split_items(text: str, where: str) -> list[str]:
    """SPEC's items, split at commas outside double quotes (quotes and escapes kept for _value)."""
    items, cur, quoted, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if quoted and ch == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quoted:
        _fail(where, 'a quote (") is not closed')
    items.append("".join(cur))
    return [s.strip() for s in items]


def _unquote(value: str, where: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        try:
            return json.loads(v)
        except ValueError:
            _fail(where, f"cannot read the quoted text {v[:40]}... (inside quotes write \\\" and \\\\)")
    if '"' in v:
        _fail(where, f"quote the whole text: {v[:40]!r}")
    return v


def _whole(key: str, value: Any, lo: int, hi: int, what: str, where: str) -> int:
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            _fail(where, f"{key} must be a whole number ({what}) from {lo} to {hi}, got {value.strip()!r}")
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        _fail(where, f"{key} must be a whole number ({what}) from {lo} to {hi}, got {value!r}")
    return value


def _names(key: str, value: Any, where: str) -> list[str]:
    items = value.split("|") if isinstance(value, str) else value
    if not isinstance(items, list) or not items or \
            not all(isinstance(x, str) and x.strip() and not set(x) & set("|,\"") for x in items):
        _fail(where, f"provider {key} must be one or more names (A|B on the command line, a list in a file), "
                     f"got {value!r}")
    items = [x.strip() for x in items]
    if key == "quantizations":
        bad = [x for x in items if x not in QUANTIZATIONS]
        if bad:
            _fail(where, f"provider quantizations {', '.join(bad)} unknown (known: {', '.join(QUANTIZATIONS)})")
    return items


def _provider(value: Any, where: str) -> dict:
    if not isinstance(value, dict) or not value:
        _fail(where, "provider must be an object with only, order, allow_fallbacks or quantizations")
    unknown = [k for k in value if k not in PROVIDER_KEYS]
    if unknown:
        _fail(where, f"provider {unknown[0]!r} is not one of {', '.join(PROVIDER_KEYS)}")
    out = {}
    for k in PROVIDER_KEYS:
        if k not in value:
            continue
        v = value[k]
        if k == "allow_fallbacks":
            if isinstance(v, str) and v.strip().lower() in ("true", "false"):
                v = v.strip().lower() == "true"
            if not isinstance(v, bool):
                _fail(where, f"provider allow_fallbacks must be true or false, got {v!r}")
            out[k] = v
        else:
            out[k] = _names(k, v, where)
    return out


def _prompt(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        _fail(where, "prompt must be a non-empty text")
    if len(value) > PROMPT_CHARS:
        _fail(where, f"prompt is {len(value)} characters, more than {PROMPT_CHARS}")
    return value


def check_name(name: Any, where: str | None = None) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        _fail(where or repr(name), f"a condition name is 1 to 40 letters, digits, '.', '_' or '-' (starting with a "
                                   f"letter or digit), got {name!r}")
    return name


def make_condition(name: str, spec: dict, where: str | None = None) -> Condition:
    """A condition from a name and a spec mapping ({px, q, prompt, provider}), every part checked."""
    where = where or name
    check_name(name, where)
    if not isinstance(spec, dict):
        _fail(where, f"the spec must be a table of {', '.join(KEYS)}, got {type(spec).__name__}")
    unknown = [k for k in spec if k not in KEYS]
    if unknown:
        _fail(where, f"{unknown[0]!r} is not a part of a condition (known: {', '.join(KEYS)})")
    values: dict[str, Any] = {}
    if "px" in spec:
        values["px"] = _whole("px", spec["px"], *PX_RANGE, "the longest side in pixels", where)
    if "q" in spec:
        values["q"] = _whole("q", spec["q"], *Q_RANGE, "the JPEG quality", where)
    if "prompt" in spec:
        values["prompt"] = _prompt(spec["prompt"], where)
    if "provider" in spec:
        values["provider"] = _provider(spec["provider"], where)
    cond = Condition(name, **values)
    if name == REFERENCE and cond.spec():
        _fail(where, "the name 'reference' is the reference question and photos (an empty spec); give this "
                     "condition another name")
    return cond


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


def parse_spec(name: str, text: str, where: str | None = None) -> Condition:
    """NAME and SPEC text (px:512,q:80,prompt:"...",provider:only=A|B) as a condition."""
    where = _short(where or f"{name}={text}")
    spec: dict[str, Any] = {}
    provider: dict[str, Any] = {}
    for item in _split_items(text, where) if text.strip() else []:
        if not item:
            _fail(where, "an empty item (two commas in a row, or a comma at the end)")
        key, sep, value = item.partition(":")
        key = key.strip()
        if not sep:
            _fail(where, f"{item[:40]!r} is not KEY:VALUE (keys: {', '.join(KEYS)})")
        if key not in KEYS:
            _fail(where, f"{key!r} is not a part of a condition (known: {', '.join(KEYS)})")
        if key == "provider":
            sub, eq, v = value.partition("=")
            sub = sub.strip()
            if not eq:
                _fail(where, f"provider:{value[:30]} is not provider:KEY=VALUE (keys: {', '.join(PROVIDER_KEYS)})")
            if sub in provider:
                _fail(where, f"provider {sub} is given twice")
            provider[sub] = v.strip()
            continue
        if key in spec:
            _fail(where, f"{key} is given twice")
        spec[key] = _unquote(value, where) if key == "prompt" else value.strip()
    if provider:
        spec["provider"] = provider
    return make_condition(name, spec, where)


def parse_condition(arg: str) -> Condition:
    """One --condition value: NAME=SPEC, or `reference` alone."""
    if not isinstance(arg, str):
        _fail(repr(arg), "a condition is NAME=SPEC text")
    name, sep, text = arg.partition("=")
    name = name.strip()
    if not sep:
        if name == REFERENCE:
            return REFERENCE_CONDITION
        _fail(_short(arg), "write NAME=SPEC, e.g. small=px:512,q:80 or terse=prompt:\"Hot dog? JSON.\" "
                           "(only 'reference' stands alone)")
    return parse_spec(name, text, arg)


def conditions_from_mapping(data: Any, where: str) -> list[Condition]:
    """{name: spec} (or {"conditions": {name: spec}}) from a TOML or JSON file; an empty spec {} is allowed
    for `reference` (and for an A/A arm under another name)."""
    if isinstance(data, dict) and set(data) == {"conditions"}:
        data = data["conditions"]
    if not isinstance(data, dict) or not data:
        _fail(where, "the file must hold a table of conditions: [conditions.NAME] with px, q, prompt, provider",
              "conditions_file")
    out = []
    for name, spec in data.items():
        try:
            out.append(make_condition(name, spec, f"{where}: [conditions.{name}]"))
        except ConditionError as e:
            raise ConditionError(e.problem, "conditions_file") from None
    return out


def load_conditions_file(path: str | Path) -> list[Condition]:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConditionError(f"cannot read {path}: {e.strerror or e}", "conditions_file") from None
    try:
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except ValueError as e:
        raise ConditionError(f"{path}: not valid {'TOML' if path.suffix.lower() == '.toml' else 'JSON'} ({e})",
                             "conditions_file") from None
    return conditions_from_mapping(data, str(path))


def resolve_conditions(given: Any = None, file: str | Path | None = None) -> list[Condition] | None:
    """What a user gave (None; NAME=SPEC strings; Condition objects; a {name: spec} mapping) and a conditions
    file, as an ordered list without two of one name; None when nothing was given (the reference alone, a plain
    run)."""
    out: list[Condition] = []
    if file:
        out += load_conditions_file(file)
    if isinstance(given, dict):
        out += conditions_from_mapping(given, "conditions")
    elif isinstance(given, (str, Condition)):
        given = [given]
    if isinstance(given, (list, tuple)):
        for g in given:
            if isinstance(g, Condition):
                out.append(make_condition(g.name, g.spec()))  # checked like the rest
            elif isinstance(g, str) and g.strip():
                out.append(parse_condition(g.strip()))
            elif not (isinstance(g, str) and not g.strip()):
                _fail(repr(g)[:40], "a condition is NAME=SPEC text or a Condition")
    elif given is not None and not isinstance(given, (dict, str, Condition)):
        _fail(repr(given)[:40], "conditions are NAME=SPEC texts, a {name: spec} table or a file")
    if not out:
        return None
    seen: dict[str, Condition] = {}
    for c in out:
        if c.name in seen:
            _fail(c.name, "two conditions have this name: give each its own")
        seen[c.name] = c
    return out


def arm_label(model: str, condition: str | None) -> str:
    """How tables, events and budgets name one (model, condition): the model alone for the reference."""
    return model if condition in (None, REFERENCE) else f"{model}@{condition}"
