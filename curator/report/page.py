"""The page: ``report.html`` from :class:`~curator.report.collect.RunArtifacts`.

Python reads what :func:`collect` gives into small view records (below); the jinja2
templates in ``curator/report/templates/`` lay them out, with autoescape on: every
string from the data is escaped by the template, and only the charts of
:mod:`curator.report.svg` (which escapes its own text) and the ``&ndash;`` of a missing
number enter as :class:`~markupsafe.Markup`. Self-contained: inline CSS, inline SVG
(and the subset's PNG inlined as base64), no script, no network; links are relative to
the output root (percent-encoded), so the root can be moved or copied with its report.
A root on object storage (:attr:`RunArtifacts.url`): the page goes up beside the
steps' prefixes, and links to their objects are relative to the root's URL too (they
work wherever the bucket is synced or served); each step's folder is one listing.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import jinja2
import jinja2.ext
from markupsafe import Markup

from curator.errors import CuratorError
from curator.io import shared, storage
from curator.io.writers import write_atomic
from curator.models import (
    ArtifactModel,
    AuditReport,
    DecontaminationReport,
    ProfileReport,
    RunManifest,
    SubsetReport,
)
from curator.report.collect import RunArtifacts, collect
from curator.report.svg import histogram, share_bar

_A = TypeVar("_A", bound=ArtifactModel)

REPORT_NAME = "report.html"
#: a directory's files are linked one by one up to this many; the rest by the directory
MAX_FILES = 12


class _OneLine(jinja2.ext.Extension):
    """A line break in an ``.html`` template, with the indentation around it, becomes
    nothing beside a tag (a line ending in ``>``, ``%}`` or ``#}``, or starting with
    ``<``, ``{%`` or ``{#``) and at the end, else one space: readable templates, and the
    page one line as before. Hand-written: jinja2's whitespace options (``trim_blocks``)
    drop only lines of block tags. It runs on template source, never on the data."""

    _BREAK = re.compile(r"[ \t]*\n\s*")

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        if not (name or "").endswith(".html"):
            return source

        def join(m: re.Match[str]) -> str:
            before, after = source[max(m.start() - 2, 0):m.start()], source[m.end():m.end() + 2]
            tag = before.endswith((">", "%}", "#}")) or after.startswith(("<", "{%", "{#"))
            return "" if tag or not after else " "

        return self._BREAK.sub(join, source)


def _n(x: Any) -> str:
    """A count as the page shows it: thousands separated, ``&ndash;`` when absent."""
    return Markup("&ndash;") if x is None else f"{x:,}" if isinstance(x, int) else str(x)


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else Markup("&ndash;")


def _bar(share: float, width: int) -> Markup:
    return Markup(share_bar(share, width))  # svg.py escapes its own text


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("curator.report", "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
    extensions=[_OneLine])
_ENV.filters.update(n=_n, pct=_pct)
_ENV.globals.update(bar=_bar)


# -- the view: what the templates show -----------------------------------------------------

@dataclass(frozen=True)
class Link:
    """A link relative to the output root: ``href`` percent-encoded, ``text`` as shown."""

    href: str
    text: str


@dataclass(frozen=True)
class StepRow:
    step_id: str
    last_flow: str | None
    state: str  # "ok", "bad" or "muted": how the artifact's state is shown
    state_text: str
    file: Link | None
    summary_lines: list[str]


@dataclass(frozen=True)
class LossRow:
    label: str
    documents_in: int
    documents_out: int
    losses: list[tuple[str, int, int | None]]  # reason, documents, tokens
    note: str
    balanced: bool
    previous: int | None  # what the step before passed on, when this step read otherwise


@dataclass(frozen=True)
class Counts:
    """Documents by name (a gate, a rule): bars against ``top``, shares of ``whole``."""

    rows: list[tuple[str, int]]
    top: float
    whole: int


@dataclass(frozen=True)
class Signal:
    name: str
    direction: str
    quantiles: str
    chart: Markup


@dataclass(frozen=True)
class Stratum:
    key: str
    documents: Any
    tokens: int
    per_tier: list[tuple[int, int]]  # tokens in the tier, the tier's achieved tokens


@dataclass(frozen=True)
class Tier:
    link: Link
    budget: Any
    documents: Any
    achieved: Any
    shortfall: Any
    exhausted: int


@dataclass
class Folder:
    """A step's output dir as the artifacts section lists it."""

    step_id: str
    link: Link | None
    exists: bool
    items: list[Link] = field(default_factory=list)
    more: tuple[int, Link] | None = None  # files beyond MAX_FILES, and the dir's link
    #: the part_* shards' link, their bytes (None: not summed, on a bucket)
    shards: tuple[Link, int | None] | None = None


class View:
    """The page's sections, read from ``run``; each section is one template."""

    def __init__(self, run: RunArtifacts) -> None:
        self.run = run

    def link(self, path: Path | str, text: str | None = None) -> Link:
        if isinstance(path, str) and storage.is_remote(path):
            return self.url_link(path, text)
        p = self.run.local(path)
        rel = os.path.relpath(p, self.run.root)
        href = quote(rel.replace(os.sep, "/")) + ("/" if p.is_dir() else "")
        return Link(href, text or rel)

    def url_link(self, url: str, text: str | None = None, folder: bool = False) -> Link:
        """An object (or a prefix: ``folder``) as a link relative to the root's URL;
        an object elsewhere as its URL."""
        base = self.run.url
        rel = storage.relative(url.rstrip("/"), base) if base else None
        if rel is None:
            return Link(url, text or url)
        return Link(quote(rel) + ("/" if folder else ""), text or rel)

    def artifact(self, key: str, model: type[_A]) -> _A | None:
        """Step ``key``'s typed completion artifact, when it has one with any keys."""
        step = self.run.step(key)
        found = step.artifact if step is not None else None
        return found if isinstance(found, model) and found.dump() else None

    def header(self) -> dict[str, Any]:
        flow = self.run.flow
        status = flow.status if flow else None
        err = flow.error if flow else None
        return {
            "root": self.run.url or str(self.run.root), "flow": bool(flow and flow.dump()),
            "status": status,
            "status_class": "ok" if status == "ok" else "bad" if status else "muted",
            "started": flow.started_at if flow else None,
            "finished": flow.completed_at if flow else None,
            "policy": flow.policy_status if flow else None,
            "applied": flow.policy_applied if flow else None,
            "audit_passed": flow.audit_passed if flow else None,
            "error": (err.error_id, err.message if "message" in err.model_fields_set else None)
            if err is not None else None,
        }

    def steps(self) -> dict[str, Any]:
        rows = []
        for s in self.run.steps:
            if s.artifact is None and s.flow_status == "disabled":
                state, text = "muted", "not run"  # an optional step left off (dedup)
            elif s.artifact is None:
                state, text = "muted", s.problem or "absent"
            elif s.complete:
                state, text = "ok", "complete"
            else:
                state, text = "bad", s.problem or "incomplete"
            file = self.link(s.completion) if s.completion and s.completion.is_file() else None
            where = s.spec.completion_location(s.config) if s.url else None
            if where is not None and s.artifact is not None:  # read from the bucket
                file = self.url_link(where)
            rows.append(StepRow(s.spec.step_id, s.flow_status or None, state, text, file,
                                (s.summary() or "").split("\n")))
        return {"rows": rows}

    def funnel(self) -> dict[str, Any]:
        run = self.run
        if not run.funnel and not run.tiers:
            return {"points": None}
        start = run.funnel[0].documents_in if run.funnel else run.tiers[0].documents_in
        points: list[tuple[str, int, int | None]] = []
        if run.funnel:
            points.append((f"read by {run.funnel[0].key}", run.funnel[0].documents_in,
                           run.funnel[0].tokens_in))
        points += [(f"after {st.key}", st.documents_out, st.tokens_out) for st in run.funnel]
        if run.tiers and points and points[-1][2] is None \
                and points[-1][1] == run.tiers[0].documents_in:  # the corpus the subset counted
            points[-1] = (points[-1][0], points[-1][1], run.tiers[0].tokens_in)
        points += [(st.label, st.documents_out, st.tokens_out) for st in run.tiers]
        subset = self.artifact("subset", SubsetReport)
        unit = str((subset.unit if subset else None) or "tokens")
        losses = []
        previous: int | None = None
        for st in [*run.funnel, *run.tiers]:
            tier = st in run.tiers
            read_otherwise = previous is not None and not tier and st.documents_in != previous
            losses.append(LossRow(st.label, st.documents_in, st.documents_out,
                                  [(x.reason, x.documents, x.tokens) for x in st.losses],
                                  st.note, st.balanced, previous if read_otherwise else None))
            if not tier:
                previous = st.documents_out
        return {"points": points, "start": start, "losses": losses,
                "tokens": "tokens" if unit == "tokens" else f"tokens ({unit})"}

    def removals(self) -> dict[str, Any]:
        # gates, rules: their Counts; None without an artifact; "unreadable" for another shape
        view: dict[str, Any] = {"gates": None, "rules": None}
        manifest = self.artifact("filter", RunManifest)
        if manifest is not None:
            filtered = manifest.declared.filtered if manifest.declared else None
            n_in = manifest.input.row_count if manifest.input else None
            if filtered is None or n_in is None or manifest.rejected_dir is None:
                view["gates"] = "unreadable"
            else:
                gates = list(dict.fromkeys([*(manifest.gates or []), *filtered]))
                view["gates"] = Counts([(str(g), filtered.get(g, 0)) for g in gates],
                                       max([*filtered.values(), 1]), n_in)
                view["rejected"] = self.link(_path(manifest.rejected_dir))
        report = self.artifact("decontamination", DecontaminationReport)
        if report is not None:
            res = report.result
            if res is None or res.train_documents_in is None \
                    or res.train_documents_removed is None:
                view["rules"] = "unreadable"
            else:
                rules = res.removed_by_rule or {}
                view["rules"] = Counts([(str(k), v) for k, v in rules.items()],
                                       max([*rules.values(), 1]), res.train_documents_in)
                view["removed"] = res.train_documents_removed
                view["claim"] = report.claim if report.claim is not None else ""
        return view

    def thresholds(self) -> dict[str, list[tuple[str, str, float]]]:
        """The approved policy's thresholds by signal, plus the filter's word bounds."""
        run = self.run
        marks: dict[str, list[tuple[str, str, float]]] = {}
        listed = (run.policy or {}).get("thresholds") if isinstance(run.policy, dict) else None
        for t in listed if isinstance(listed, list) else []:  # a policy of another shape:
            if not isinstance(t, dict):  # no marks (the page never fails on it)
                continue
            for kind in ("min", "max"):
                if isinstance(t.get(kind), int | float):
                    marks.setdefault(str(t.get("signal")), []).append(
                        (kind, f"approved {kind} {t[kind]}", float(t[kind])))
        filt = run.step("filter")
        quality = (filt.config.get("quality_filters") or {}) if filt else {}
        for key, kind in (("min_words", "min"), ("max_words", "max")):
            if isinstance(quality.get(key), int | float):
                marks.setdefault("word_count", []).append(
                    (kind, f"filter {key} {quality[key]}", float(quality[key])))
        return marks

    def profile(self) -> dict[str, Any]:
        run = self.run
        report = self.artifact("profile", ProfileReport)
        if report is None:
            return {"report": False}
        marks = self.thresholds()
        signals = []
        for block in report.signals or []:
            name = block.signal
            micro = (block.views.get("micro") if block.views else None) or {}
            quants = ", ".join(f"{q} {micro[q]:.4g}" for q in ("p10", "p50", "p90")
                               if isinstance(micro.get(q), int | float))
            chart = histogram(block.histogram.dump() if block.histogram else {},
                              marks.get(name, []), name, str(block.units or ""))
            signals.append(Signal(name, str(block.direction), quants,
                                  Markup(chart)))  # svg.py escapes its own text
        corpus, sampling = report.corpus, report.sampling
        return {"report": True, "documents": corpus.document_count if corpus else None,
                "sources": corpus.source_count if corpus else None,
                "sampled": sampling.sampled if sampling else None,
                "policy": self.link(run.policy_path) if run.policy else None,
                "signals": signals}

    def audit(self) -> dict[str, Any]:
        report = self.artifact("audit", AuditReport)
        if report is None:
            return {"report": False}
        target = report.target
        steps = report.steps or {}
        return {
            "report": True, "passed": bool(report.passed), "mode": report.mode,
            "shards": target.file_count if target else None,
            "rows": target.row_count if target else None,
            "digest": (target.digest or None) if target else None,
            "strengths": [(s.level, s.claim, bool(s.made), s.reason or s.basis)
                          for s in report.strengths or []],
            "steps": [(k, v.artifact, ", ".join(v.findings or []))
                      for k, v in steps.items()] if steps else None,
            "findings": [(f.name, f.message) for f in report.findings or []],
        }

    def tiers(self) -> dict[str, Any]:
        step = self.run.step("subset")
        report = self.artifact("subset", SubsetReport)
        if step is None or report is None:
            return {"report": False}
        unit = str(report.unit or "tokens")
        tiers = report.tiers or []
        rows = [Tier(self.link(_path(str(t.output)), Path(str(t.output)).name),
                     t.budget, t.document_count, t.achieved_tokens,
                     t.token_shortfall, len(t.strata_exhausted or []))
                for t in tiers]
        strata_view: dict[str, Any] | None = None
        strata = (report.stratification.strata if report.stratification else None) or {}
        if strata and tiers:
            total = sum(s.tokens or 0 for s in strata.values()) or 1
            shares = [f"share of tier {t.budget:,}" for t in tiers]
            achieved = [t.achieved_tokens or 0 for t in tiers]
            ordered = sorted(strata.items(), key=lambda kv: (-(kv[1].tokens or 0), kv[0]))
            strata_view = {"head": ["stratum", "documents", unit, "share of the corpus", *shares],
                           "total": total, "rows": [
                Stratum(str(key), s.documents, s.tokens or 0,
                        [(t.per_stratum_tokens.get(key, 0) if t.per_stratum_tokens else 0, a)
                         for t, a in zip(tiers, achieved, strict=True)])
                for key, s in ordered]}
        png = _picture(step.url, step.output_dir, "tier_shares.png")
        return {"report": True, "unit": unit, "tiers": rows, "strata": strata_view, "png": png,
                "nesting": report.nesting_verified,
                "interpretation": report.interpretation or "",
                "warnings": [(w.id, w.message) for w in report.warnings or []]}

    def remote_folder(self, step_id: str, url: str) -> Folder:
        """A step's output prefix on the bucket, from one listing (no sizes: the shards'
        bytes are not summed, their count is given)."""
        try:
            with storage.store_errors(f"cannot list {url}", True, url=url):
                names = storage.list_files(url) if storage.exists(url) else []
        except CuratorError:
            return Folder(step_id, self.url_link(url, folder=True), True)
        visible = [n for n in names if not any(p.startswith(".") for p in n.split("/"))]
        if not visible:
            return Folder(step_id, None, False)
        view = Folder(step_id, self.url_link(url, folder=True), True)
        tops = sorted({n.split("/")[0] + ("/" if "/" in n else "") for n in visible},
                      key=lambda n: (n.endswith("/"), n))
        shards = [n for n in tops if n.startswith("part_") and not n.endswith("/")]
        rest = [n for n in tops if n not in shards]
        view.items = [self.url_link(storage.join(url, n), n, folder=n.endswith("/"))
                      for n in rest[:MAX_FILES]]
        if len(rest) > MAX_FILES:
            view.more = (len(rest) - MAX_FILES, self.url_link(url, folder=True))
        if shards:
            view.shards = (self.url_link(url, f"{len(shards)} shards part_*", folder=True),
                           None)
        return view

    def folder(self, step_id: str, folder: Path) -> Folder:
        if not folder.is_dir():
            return Folder(step_id, None, False)
        view = Folder(step_id, self.link(folder), True)
        entries = sorted(folder.iterdir(), key=lambda p: (p.is_dir(), p.name))
        entries = [p for p in entries if not p.name.startswith(".")]
        shards = [p for p in entries if p.is_file() and p.name.startswith("part_")]
        rest = [p for p in entries if p not in shards]
        view.items = [self.link(p, p.name + ("/" if p.is_dir() else ""))
                      for p in rest[:MAX_FILES]]
        if len(rest) > MAX_FILES:
            view.more = (len(rest) - MAX_FILES, self.link(folder))
        if shards:
            view.shards = (self.link(folder, f"{len(shards)} shards part_*"),
                           sum(p.stat().st_size for p in shards))
        return view

    def artifacts(self) -> dict[str, Any]:
        run = self.run
        flow = [(name, self.link(run.root / name) if (run.root / name).is_file() else None)
                for name in ("flow_plan.json", "flow_report.json")]
        policy = self.link(run.policy_path) if run.policy_path.is_file() else None
        return {"flow": flow, "policy": policy,
                "folders": [self.remote_folder(s.spec.step_id, s.url) if s.url
                            else self.folder(s.spec.step_id, s.output_dir)
                            for s in run.steps
                            if not (s.artifact is None and s.flow_status == "disabled")]}


def _path(value: str) -> Path | str:
    """A path an artifact names: a URL stays a string (a ``Path`` would fold ``//``)."""
    return value if storage.is_remote(value) else Path(value)


def _picture(url: str | None, folder: Path, name: str) -> str | None:
    """A small PNG of a step's output dir (a file, or an object: one GET) as base64."""
    try:
        if url is not None:
            where = storage.join(url, name)
            with storage.store_errors(f"cannot read {where}", True, url=where):
                data = storage.read(where) if storage.size(where) < 2_000_000 else None
        else:
            picture = folder / name
            data = picture.read_bytes() if picture.is_file() \
                and picture.stat().st_size < 2_000_000 else None
    except (OSError, CuratorError):
        return None
    return base64.b64encode(data).decode("ascii") if data is not None else None


def build_html(run: RunArtifacts | str | Path) -> str:
    """The report of an output root (or of what :func:`collect` read from it)."""
    if not isinstance(run, RunArtifacts):
        run = collect(run)
    view = View(run)
    title = run.url.rsplit("/", 1)[-1] if run.url else run.root.name
    return _ENV.get_template("report.html").render(
        title=title, header=view.header(), steps=view.steps(), funnel=view.funnel(),
        removals=view.removals(), profile=view.profile(), audit=view.audit(),
        tiers=view.tiers(), artifacts=view.artifacts())


def write_report(root: str | Path) -> Path | str:
    """Write ``<root>/report.html`` atomically; return its path. ``root`` may be the
    URL of a root ``curate flow`` wrote on object storage (a string): the page is built
    from its flow files, fetched to a temporary directory, and put beside them."""
    if isinstance(root, str) and storage.is_remote(root):
        return _write_remote(root.rstrip("/"))
    root = Path(root)
    path = root / REPORT_NAME
    write_atomic(path, build_html(root))
    return path


#: the flow's own files of a root on object storage, what the page reads besides the
#: steps' objects
_FLOW_FILES = ("flow_plan.json", "flow_report.json", "policy/approved_policy.yaml")


def _write_remote(url: str) -> str:
    """``report.html`` of a bucket root (:func:`write_report`); returns its URL."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="curate-report-") as tmp:
        local = Path(tmp).absolute()
        for name in _FLOW_FILES:
            where = storage.join(url, name)
            with storage.store_errors(f"curate report: cannot fetch {where}", True, url=where):
                if storage.isfile(where):
                    (local / name).parent.mkdir(parents=True, exist_ok=True)
                    storage.get_file(where, local / name)
        if not (local / "flow_plan.json").is_file():
            raise CuratorError("output_root_missing",
                               f"{url} holds no flow_plan.json: curate report reads a root "
                               "on object storage that curate flow wrote")
        with shared.driving(shared.SharedArea(str(local), url)):  # the page goes up
            write_atomic(local / REPORT_NAME, build_html(local))
    return storage.join(url, REPORT_NAME)


__all__ = ["REPORT_NAME", "build_html", "write_report"]
