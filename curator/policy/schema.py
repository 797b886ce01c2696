"""The approved policy's schema: the :class:`ApprovedPolicy` model and :func:`validate_policy`.

The model states the rules (``docs/policy.md``, "Validation"); :func:`validate_policy`
runs it and says each unmet rule in the project's words (:func:`_problems`), the
messages tests, docs and users already know.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from curator.signals.registry import REGISTRY, SignalSpec

SCHEMA_VERSION = 1
APPROVAL_METHODS: tuple[str, ...] = ("manual", "ablation")
REQUIRED_KEYS: tuple[str, ...] = (
    "schema_version", "approved", "corpus", "signals_impl_version", "profile_digest",
    "thresholds",
)
BOUND_KEYS: tuple[str, ...] = ("min", "max")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


# -- value checks shared with loading and promotion ------------------------------------------


def finite(value: object) -> float | None:
    """``value`` as a float if it is a finite real number (not a bool), else ``None``."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past float's range, such as 10**400
        return None
    return number if math.isfinite(number) else None


def nonempty_str(value: object) -> bool:
    """A string with something besides whitespace."""
    return isinstance(value, str) and bool(value.strip())


def valid_date(value: object) -> bool:
    """A real ``YYYY-MM-DD`` string, or a date (an unquoted date in a hand-edited file)."""
    if isinstance(value, _dt.date):
        return True
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        return False
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def bound_keys(spec: SignalSpec) -> tuple[str, ...]:
    """The bounds a signal's entry takes: both for an interval, else its direction's."""
    return BOUND_KEYS if spec.is_interval else (spec.direction,)


def policy_bytes(doc: Mapping[str, Any], header: str) -> bytes:
    """A policy document (either file) as written: ``header`` then block-style YAML."""
    return (header + yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True)).encode()


# -- the model -------------------------------------------------------------------------------


def _rule(kind: str, text: str, loc: tuple[int, ...] = ()) -> InitErrorDetails:
    """One unmet rule found by our own code; ``text`` is already the project's message."""
    return InitErrorDetails(type=PydanticCustomError(kind, text), loc=loc, input=None)


def _all_of(
    data: Any, handler: Callable[[Any], Any], found: list[InitErrorDetails], title: str
) -> Any:
    """``handler(data)``, raising its errors and ``found`` together.

    Hand-written because pydantic skips a model's own checks once a field fails, and
    :func:`validate_policy` lists every unmet rule.
    """
    try:
        value = handler(data)
    except ValidationError as exc:
        found = [
            InitErrorDetails(type=PydanticCustomError(e["type"], e["msg"]), loc=e["loc"],
                             input=e["input"])
            for e in exc.errors()
        ] + found
    if found:
        raise ValidationError.from_exception_data(title, found)
    return value


def _not_bool(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a schema version")
    return value


def _registered(name: str) -> str:
    if name not in REGISTRY:
        raise ValueError("not a registered signal")
    return name


def _true(value: bool) -> bool:
    if value is not True:
        raise ValueError("not true")
    return value


def _date(value: object) -> object:
    if value is not None and not valid_date(value):
        raise ValueError("not YYYY-MM-DD")
    return value


Digest = Annotated[StrictStr, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
NonEmpty = Annotated[StrictStr, StringConstraints(strip_whitespace=True, min_length=1)]


class Corpus(BaseModel):
    """``corpus``: only its fingerprint is checked here (the rest is provenance)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    fingerprint: Digest


class Approval(BaseModel):
    """``approval``: who approved, how, on what evidence and (optionally) when."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    approver: NonEmpty
    evidence: NonEmpty
    method: Literal["manual", "ablation"]
    #: a date object is what an unquoted ``2024-05-01`` in a hand-edited file loads as
    date: Annotated[str | _dt.date | None, PlainValidator(_date)] = None


class ThresholdEntry(BaseModel):
    """One ``thresholds[]`` entry: a registered signal and the bound(s) its direction takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    signal: Annotated[StrictStr, AfterValidator(_registered)]
    min: float | None = None
    max: float | None = None

    @field_validator("min", "max", mode="before")
    @classmethod
    def _finite(cls, value: object) -> float:
        number = finite(value)  # null, a bool, a string, NaN, ±inf and 10**400 are refused
        if number is None:
            raise ValueError("not a finite number")
        return number

    @model_validator(mode="wrap")
    @classmethod
    def _bounds(cls, data: Any, handler: Callable[[Any], ThresholdEntry]) -> ThresholdEntry:
        """The rules between keys, checked on the entry as written (so even when a field fails)."""
        if not isinstance(data, Mapping):
            return handler(data)
        bounds = {k: data[k] for k in BOUND_KEYS if k in data}
        found: list[InitErrorDetails] = []
        if not bounds:
            found.append(_rule("no_bound", "no bound (there is no fallback to Curator defaults)"))
        if len(bounds) == 2 and all(finite(v) is not None for v in bounds.values()) and (
                bounds["min"] > bounds["max"]):
            found.append(_rule("min_above_max", f"min {bounds['min']!r} > max {bounds['max']!r}"))
        name = data.get("signal")
        spec = REGISTRY.get(name) if isinstance(name, str) else None
        if spec is not None and bounds and tuple(k for k in BOUND_KEYS if k in bounds) != (
                need := bound_keys(spec)):
            article = "an" if spec.is_interval else "a"
            found.append(_rule(
                "bound_inverts_gate",
                f"{article} {spec.direction} signal takes {' and '.join(need)}, got "
                f"{' and '.join(k for k in BOUND_KEYS if k in bounds)} (anything else would "
                "invert the gate)",
            ))
        return _all_of(data, handler, found, cls.__name__)


class ApprovedPolicy(BaseModel):
    """``approved_policy.yaml`` as ``curate approve`` writes it and the filter applies it.

    Keys besides these (a candidate's ``note`` and ``candidates``) are ignored.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: Annotated[Literal[1], BeforeValidator(_not_bool)]
    approved: Annotated[StrictBool, AfterValidator(_true)]
    signals_impl_version: NonEmpty
    profile_digest: Digest
    corpus: Corpus
    #: the pack's hash is checked against the loaded pack by ``check_provenance``, not here
    langpack: dict[Any, Any] = Field(default_factory=dict)
    approval: Approval = Field(default_factory=dict, validate_default=True)  # type: ignore[arg-type]
    thresholds: list[ThresholdEntry] = Field(min_length=1, strict=True)

    @field_validator("approval", mode="before")
    @classmethod
    def _absent_approval(cls, value: object) -> object:
        return {} if value is None else value  # a null approval is an empty one

    @field_validator("thresholds", mode="wrap")
    @classmethod
    def _one_entry_per_signal(
        cls, entries: Any, handler: Callable[[Any], list[ThresholdEntry]]
    ) -> list[ThresholdEntry]:
        if not isinstance(entries, list):
            return handler(entries)
        seen: set[str] = set()
        found: list[InitErrorDetails] = []
        for i, entry in enumerate(entries):
            name = entry.get("signal") if isinstance(entry, Mapping) else None
            if isinstance(name, str) and name in REGISTRY:
                if name in seen:
                    found.append(_rule("duplicate_signal", "duplicate signal", (i,)))
                seen.add(name)
        return _all_of(entries, handler, found, "thresholds")


# -- the project's messages ------------------------------------------------------------------

_DIGEST_TEXT = "must be sha256: and 64 hex characters, got {value!r}"
#: a pydantic error at this top-level field (or nested path) → the project's message
_FIELD_TEXT: dict[tuple[str, ...], str] = {
    ("schema_version",): f"must be {SCHEMA_VERSION}, got {{value!r}}",
    ("approved",): "must be the boolean true, got {value!r}",
    ("signals_impl_version",): "must be a non-empty string",
    ("profile_digest",): _DIGEST_TEXT,
    ("corpus",): "must be a mapping",
    ("corpus", "fingerprint"): _DIGEST_TEXT,
    ("langpack",): "must be a mapping",
    ("approval",): "must be a mapping {{approver, date, method, evidence}}",
    ("approval", "approver"): "must be a non-empty string",
    ("approval", "evidence"): "must be a non-empty string",
    ("approval", "method"): f"must be one of {', '.join(APPROVAL_METHODS)}, got {{value!r}}",
    ("approval", "date"): "must be YYYY-MM-DD when given, got {value!r}",
    ("thresholds",): "must be a non-empty list (there is no fallback to Curator defaults)",
}
#: the order the rules of one threshold entry are listed in
_ENTRY_ORDER = ("signal", "duplicate_signal", "unknown", "no_bound", "min", "max",
                "min_above_max", "bound_inverts_gate")
#: the order the other rules are listed in
_FIELD_ORDER = list(_FIELD_TEXT)


def validate_policy(doc: object) -> list[str]:
    """Every unmet rule of an approved policy, one message each; ``[]`` means valid."""
    if not isinstance(doc, Mapping):
        return [f"policy: must be a mapping, got {type(doc).__name__}"]
    try:
        ApprovedPolicy.model_validate(doc)
    except ValidationError as exc:
        return _problems(exc, doc)
    return []


def _problems(exc: ValidationError, doc: Mapping[str, Any]) -> list[str]:
    """The model's errors as the project's messages, in the order the rules are listed."""
    keyed: dict[tuple[int, ...], str] = {}
    for error in exc.errors():
        loc, kind = error["loc"], error["type"]
        path = tuple(str(part) for part in loc)
        if kind == "missing" and len(loc) == 1:
            key, text = (0, REQUIRED_KEYS.index(path[0])), f"{path[0]}: required key missing"
        elif path[0] == "thresholds" and len(loc) > 1:
            i = int(loc[1])
            rank, text = _entry_problem(doc["thresholds"][i], loc[2:], kind, error["msg"],
                                        f"thresholds[{i}]")
            key = (1, _FIELD_ORDER.index(("thresholds",)), i, rank)
        elif path in _FIELD_TEXT:
            key = (1, _FIELD_ORDER.index(path))
            text = f"{'.'.join(path)}: {_FIELD_TEXT[path].format(value=_at(doc, loc))}"
        else:  # no rule of the docs says this; pydantic's own words then
            key, text = (2, len(keyed)), f"{'.'.join(path)}: {error['msg']}"
        keyed.setdefault(key, text)
    return [keyed[key] for key in sorted(keyed)]


def _entry_problem(
    entry: Any, loc: tuple[Any, ...], kind: str, msg: str, where: str
) -> tuple[int, str]:
    """``(rank in _ENTRY_ORDER, message)`` for one error inside ``thresholds[i]``."""
    if not isinstance(entry, Mapping):
        return 0, f"{where}: must be a mapping {{signal, min|max}}"
    name = entry.get("signal")
    if loc == ("signal",):
        return 0, f"{where}.signal: {name!r} is not a registered signal"
    if isinstance(name, str) and name in REGISTRY:
        where = f"{where} ({name})"
    if loc in (("min",), ("max",)):
        key = str(loc[0])
        text = f"{where}.{key}: must be a finite number, got {entry[key]!r}"
        return _ENTRY_ORDER.index(key), text
    if kind in ("extra_forbidden", "invalid_key"):  # one message for all of them
        extra = sorted(str(k) for k in entry if k not in ("signal", *BOUND_KEYS))
        text = f"{where}: unknown keys {extra} (a bound is min or max)"
        return _ENTRY_ORDER.index("unknown"), text
    return _ENTRY_ORDER.index(kind), f"{where}: {msg}"


def _at(doc: Mapping[str, Any], loc: Iterable[Any]) -> Any:
    """The value at ``loc`` in the document as written; ``None`` where it is absent."""
    value: Any = doc
    for part in loc:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value
