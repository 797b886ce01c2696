"""The page: ``report.html`` from :class:`~curator.report.collect.RunArtifacts`.

Self-contained: inline CSS, inline SVG (and the subset's PNG inlined as base64), no
script, no network. Every string from the data goes through :func:`html.escape`;
links are relative to the output root (percent-encoded), so the root can be moved or
copied with its report.
"""

from __future__ import annotations

import base64
import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from curator.report.collect import RunArtifacts, Stage, StepArtifacts, collect
from curator.report.svg import histogram, share_bar

REPORT_NAME = "report.html"
#: a directory's files are linked one by one up to this many; the rest by the directory
MAX_FILES = 12

CSS = """
:root{--fg:#1d2430;--muted:#5b6473;--line:#d9dee7;--bar:#3b6fb6;--bad:#c0392b;--ok:#1e7d4f;
--bg2:#f5f7fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
margin:0 auto;max-width:1100px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
th{background:var(--bg2);font-weight:600}td.n,th.n{text-align:right;white-space:nowrap}
code{font-size:12px;background:var(--bg2);padding:1px 4px;border-radius:3px;
overflow-wrap:anywhere}
.muted{color:var(--muted)}.ok{color:var(--ok);font-weight:600}
.bad{color:var(--bad);font-weight:600}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;
background:var(--bg2);border:1px solid var(--line)}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(500px,1fr));gap:8px 18px}
td.step{white-space:nowrap}td.small{font-size:12px;overflow-wrap:anywhere}
svg.chart{max-width:100%;height:auto;background:#fff}
svg .bar{fill:var(--bar)}svg .track{fill:#e8ecf2}svg .removed{fill:#f6d5d1}
svg .axis{stroke:#8a93a3;stroke-width:1}svg .mark{stroke:var(--bad);stroke-width:2;
stroke-dasharray:5 3}svg .tick{font-size:10px;fill:var(--muted)}
svg .marklabel{font-size:11px;fill:var(--bad);font-weight:600;paint-order:stroke;
stroke:#fff;stroke-width:3px}
ul.losses{margin:0;padding-left:16px}ul.files{columns:2;margin:4px 0 10px}
img.inline{max-width:100%;border:1px solid var(--line)}
"""


def _n(x: Any) -> str:
    return "&ndash;" if x is None else f"{x:,}" if isinstance(x, int) else escape(str(x))


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "&ndash;"


class Page:
    def __init__(self, run: RunArtifacts) -> None:
        self.run = run
        self.parts: list[str] = []

    def add(self, *html: str) -> None:
        self.parts.extend(html)

    def link(self, path: Path | str, text: str | None = None) -> str:
        p = self.run.local(path)
        rel = os.path.relpath(p, self.run.root)
        href = quote(rel.replace(os.sep, "/")) + ("/" if p.is_dir() else "")
        return f'<a href="{escape(href)}">{escape(text or rel)}</a>'

    def table(self, head: list[str], rows: list[list[str]], numeric: set[int] | None = None,
              classes: dict[int, str] | None = None) -> None:
        """``head`` escaped here; cells are HTML already (escape data before)."""
        numeric, classes = numeric or set(), classes or {}
        cls = [' class="n"' if i in numeric else f' class="{classes[i]}"' if i in classes
               else "" for i in range(len(head))]
        self.add("<table><thead><tr>",
                 *(f"<th{cls[i]}>{escape(h)}</th>" for i, h in enumerate(head)),
                 "</tr></thead><tbody>")
        for row in rows:
            self.add("<tr>", *(f"<td{cls[i]}>{c}</td>" for i, c in enumerate(row)), "</tr>")
        self.add("</tbody></table>")


def build_html(run: RunArtifacts | str | Path) -> str:
    """The report of an output root (or of what :func:`collect` read from it)."""
    if not isinstance(run, RunArtifacts):
        run = collect(run)
    page = Page(run)
    _header(page)
    _steps(page)
    _funnel(page)
    _removals(page)
    _profile(page)
    _audit(page)
    _tiers(page)
    _artifacts(page)
    body = "".join(page.parts)
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\">"
            f"<title>Curation run report: {escape(run.root.name)}</title><style>{CSS}</style>"
            f"</head><body>{body}</body></html>\n")


def write_report(root: str | Path) -> Path:
    """Write ``<root>/report.html`` atomically; return its path."""
    root = Path(root)
    path = root / REPORT_NAME
    tmp = path.with_name(f".{REPORT_NAME}.tmp")
    tmp.write_text(build_html(root), encoding="utf-8")
    os.replace(tmp, path)
    return path


# -- sections -----------------------------------------------------------------------------

def _header(page: Page) -> None:
    run, flow = page.run, page.run.flow_report or {}
    status = flow.get("status")
    cls = "ok" if status == "ok" else "bad" if status else "muted"
    page.add("<h1>Curation run report</h1>",
             f'<p class="muted">output root <code>{escape(str(run.root))}</code></p>')
    if flow:
        page.add(f'<p>last flow: <span class="{cls}">{escape(str(status))}</span>, started '
                 f'{escape(str(flow.get("started_at")))}, finished '
                 f'{escape(str(flow.get("completed_at")))}; policy '
                 f'{escape(str(flow.get("policy_status")))} (applied: '
                 f'{escape(str(flow.get("policy_applied")))}); audit passed: '
                 f'{escape(str(flow.get("audit_passed")))}</p>')
        err = flow.get("error")
        if isinstance(err, dict):
            page.add(f'<p class="bad">error {escape(str(err.get("error_id")))}: '
                     f'{escape(str(err.get("message")))}</p>')
    else:
        page.add('<p class="muted">no flow_report.json here: the steps\' artifacts alone</p>')
    page.add('<p class="muted">Documents are counted at every step; tokens only where a step '
             "counts them (the subset, in its unit). Every number below is read from the "
             "artifacts linked at the end.</p>")


def _steps(page: Page) -> None:
    page.add("<h2>Steps</h2>")
    rows = []
    for s in page.run.steps:
        if s.data is None:
            state = f'<span class="muted">{escape(s.problem or "absent")}</span>'
        elif s.complete:
            state = '<span class="ok">complete</span>'
        else:
            state = f'<span class="bad">{escape(s.problem or "incomplete")}</span>'
        art = page.link(s.completion) if s.completion and s.completion.is_file() else "&ndash;"
        last = escape(s.flow_status) if s.flow_status else "&ndash;"
        summary = escape(s.summary() or "").replace("\n", "<br>")
        rows.append([f"<code>{escape(s.spec.step_id)}</code>", last, state, art, summary])
    page.table(["step", "last flow", "artifact", "file", "summary (the step's own)"], rows,
               classes={0: "step", 4: "small"})


def _funnel(page: Page) -> None:
    run = page.run
    page.add("<h2>Funnel: raw records to each tier</h2>")
    if not run.funnel and not run.tiers:
        page.add('<p class="muted">no step that counts documents has a readable artifact</p>')
        return
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
    unit = str((run.data("subset") or {}).get("unit") or "tokens")
    page.table(["point", "documents", "", "of the start",
                "tokens" if unit == "tokens" else f"tokens ({unit})"],
               [[escape(label), _n(docs), share_bar(docs / start if start else 0, 300),
                 _pct(docs, start), _n(tokens)] for label, docs, tokens in points], {1, 3, 4})
    page.add("<h3>Every loss, by step</h3>")
    rows = []
    previous: int | None = None
    for st in [*run.funnel, *run.tiers]:
        losses = "".join(
            f"<li>{escape(x.reason)}: {_n(x.documents)} document{'' if x.documents == 1 else 's'}"
            + (f", {_n(x.tokens)} tokens" if x.tokens is not None else "") + "</li>"
            for x in st.losses) or '<li class="muted">none</li>'
        checks = ['<span class="ok">balanced</span>' if st.balanced else
                  '<span class="bad">does not balance</span>']
        if previous is not None and st not in run.tiers and st.documents_in != previous:
            checks.append(f'<span class="bad">read {st.documents_in:,}, the step before '
                          f"passed on {previous:,}</span>")
        if st not in run.tiers:
            previous = st.documents_out
        rows.append([escape(st.label), _n(st.documents_in), _n(st.documents_out),
                     f'<ul class="losses">{losses}</ul>'
                     + (f'<span class="muted">{escape(st.note)}</span>' if st.note else ""),
                     "<br>".join(checks)])
    page.table(["step", "in", "out", "losses (reason: documents)", "check"], rows, {1, 2})


def _removals(page: Page) -> None:
    run = page.run
    page.add("<h2>Removals per gate and per decontamination rule</h2>")
    manifest = run.data("filter")
    if manifest:
        try:
            filtered = manifest["declared"]["filtered"]
            n_in = int(manifest["input"]["row_count"])
            gates = list(dict.fromkeys([*manifest.get("gates", []), *filtered]))
            top = max([*filtered.values(), 1])
            page.add(f"<h3>Filter gates ({n_in:,} documents in)</h3>")
            page.table(["gate", "removed", "", "of the input"],
                       [[f"<code>{escape(str(g))}</code>", _n(int(filtered.get(g, 0))),
                         share_bar(int(filtered.get(g, 0)) / top, 200),
                         _pct(int(filtered.get(g, 0)), n_in)] for g in gates], {1, 3})
            page.add('<p class="muted">each removed document counted once, under the first '
                     "gate that removed it (the filter's ledger); every removed record with its "
                     f"gates and scores is in {page.link(Path(str(manifest['rejected_dir'])))}</p>")
        except (KeyError, TypeError, ValueError):
            page.add('<p class="bad">the filter\'s manifest has an unexpected shape</p>')
    else:
        page.add('<p class="muted">no filter artifact</p>')
    report = run.data("decontamination")
    if report:
        try:
            res = report["result"]
            rules = res.get("removed_by_rule") or {}
            page.add(f"<h3>Decontamination rules ({int(res['train_documents_in']):,} training "
                     f"documents in, {int(res['train_documents_removed']):,} removed)</h3>")
            top = max([*rules.values(), 1])
            page.table(["rule", "documents matched", "", "of the input"],
                       [[f"<code>{escape(str(k))}</code>", _n(int(v)), share_bar(int(v) / top, 200),
                         _pct(int(v), int(res["train_documents_in"]))] for k, v in rules.items()],
                       {1, 3})
            page.add(f'<p class="muted">a document may match several rules, so these overlap; '
                     f"the funnel counts each removed document once. Claim: "
                     f"{escape(str(report.get('claim', '')))}</p>")
        except (KeyError, TypeError, ValueError):
            page.add('<p class="bad">the decontamination report has an unexpected shape</p>')
    else:
        page.add('<p class="muted">no decontamination artifact</p>')


def _thresholds(run: RunArtifacts) -> dict[str, list[tuple[str, str, float]]]:
    """The approved policy's thresholds by signal, plus the filter's word bounds."""
    marks: dict[str, list[tuple[str, str, float]]] = {}
    for t in (run.policy or {}).get("thresholds") or []:
        if not isinstance(t, dict):
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


def _profile(page: Page) -> None:
    run = page.run
    page.add("<h2>Profile: distributions and the approved thresholds</h2>")
    report = run.data("profile")
    if not report:
        page.add('<p class="muted">no profile artifact</p>')
        return
    marks = _thresholds(run)
    corpus = report.get("corpus") or {}
    sampling = report.get("sampling") or {}
    page.add(f"<p>{_n(corpus.get('document_count'))} documents in "
             f"{_n(corpus.get('source_count'))} sources, {_n(sampling.get('sampled'))} scored. "
             + (f"Thresholds from {page.link(run.policy_path)}" if run.policy else
                '<span class="muted">no approved policy: no thresholds to draw</span>')
             + ' <span class="muted">(the shaded side of a dashed line is removed)</span></p>'
             '<div class="grid">')
    for block in report.get("signals") or []:
        if not isinstance(block, dict):
            continue
        name = str(block.get("signal"))
        micro = (block.get("views") or {}).get("micro") or {}
        quants = ", ".join(f"{q} {micro[q]:.4g}" for q in ("p10", "p50", "p90")
                           if isinstance(micro.get(q), int | float))
        page.add(f"<div><h3><code>{escape(name)}</code> <span class=\"muted\">"
                 f"({escape(str(block.get('direction')))}; {escape(quants)})</span></h3>",
                 histogram(block.get("histogram") or {}, marks.get(name, []), name,
                           str(block.get("units") or "")), "</div>")
    page.add("</div>")


def _audit(page: Page) -> None:
    page.add("<h2>Audit: verdict and strengths of claim</h2>")
    report = page.run.data("audit")
    if not report:
        page.add('<p class="muted">no audit artifact</p>')
        return
    passed = bool(report.get("passed"))
    target = report.get("target") or {}
    page.add(f'<p>verdict: <span class="{"ok" if passed else "bad"}">'
             f'{"PASSED" if passed else "FAILED"}</span> (mode '
             f"{escape(str(report.get('mode')))}); {_n(target.get('file_count'))} shards, "
             f"{_n(target.get('row_count'))} rows"
             + (f", corpus digest <code>{escape(str(target['digest']))}</code>"
                if target.get("digest") else "") + "</p>")
    page.table(["level", "claim", "made", "basis, or why not"],
               [[_n(s.get("level")), escape(str(s.get("claim"))),
                 '<span class="ok">yes</span>' if s.get("made") else '<span class="bad">no</span>',
                 escape(str(s.get("reason") or s.get("basis")))]
                for s in report.get("strengths") or [] if isinstance(s, dict)], {0})
    steps = report.get("steps") or {}
    if steps:
        page.add("<h3>Later steps' artifacts checked</h3>")
        page.table(["step", "artifact", "findings"],
                   [[escape(str(k)), escape(str(v.get("artifact"))),
                     escape(", ".join(map(str, v.get("findings") or [])) or "none")]
                    for k, v in steps.items() if isinstance(v, dict)])
    findings = report.get("findings") or []
    page.add("<h3>Findings</h3><ul>" + ("".join(
        f"<li><code>{escape(str(f.get('name')))}</code>: {escape(str(f.get('message')))}</li>"
        for f in findings if isinstance(f, dict)) or "<li>none</li>") + "</ul>")


def _tiers(page: Page) -> None:
    page.add("<h2>Tiers: per-stratum composition</h2>")
    step = page.run.step("subset")
    report = step.data if step else None
    if not report:
        page.add('<p class="muted">no subset artifact</p>')
        return
    unit = str(report.get("unit") or "tokens")
    tiers = [t for t in report.get("tiers") or [] if isinstance(t, dict)]
    page.table(["tier", f"budget ({unit})", "documents", f"achieved ({unit})",
                f"shortfall ({unit})", "strata exhausted"],
               [[page.link(Path(str(t.get("output"))), Path(str(t.get("output"))).name),
                 _n(t.get("budget")), _n(t.get("document_count")), _n(t.get("achieved_tokens")),
                 _n(t.get("token_shortfall")), _n(len(t.get("strata_exhausted") or []))]
                for t in tiers], {1, 2, 3, 4, 5})
    page.add(f'<p class="muted">nesting verified: {escape(str(report.get("nesting_verified")))}'
             f"; {escape(str(report.get('interpretation') or ''))}</p>")
    strata = ((report.get("stratification") or {}).get("strata") or {})
    if strata and tiers:
        total = sum(int(s.get("tokens", 0)) for s in strata.values()) or 1
        head = ["stratum", "documents", unit, "share of the corpus"]
        head += [f"share of tier {t.get('budget'):,}" if isinstance(t.get("budget"), int)
                 else f"share of tier {t.get('budget')}" for t in tiers]  # escaped by table
        rows = []
        for key, s in sorted(strata.items(), key=lambda kv: (-int(kv[1].get("tokens", 0)),
                                                             kv[0])):
            tok = int(s.get("tokens", 0))
            row = [f"<code>{escape(str(key))}</code>", _n(s.get("documents")), _n(tok),
                   f"{share_bar(tok / total, 80)} {tok / total:.1%}"]
            for t in tiers:
                got = int((t.get("per_stratum_tokens") or {}).get(key, 0))
                achieved = int(t.get("achieved_tokens") or 0)
                row.append(f"{share_bar(got / achieved if achieved else 0, 80)} "
                           f"{_pct(got, achieved)}")
            rows.append(row)
        page.table(head, rows, {1, 2},
                   classes={i: "step" for i in range(len(head)) if i not in (1, 2)})
    picture = step.output_dir / "tier_shares.png" if step else None
    if picture and picture.is_file() and picture.stat().st_size < 2_000_000:
        data = base64.b64encode(picture.read_bytes()).decode("ascii")
        page.add(f'<p><img class="inline" alt="per-stratum shares of the corpus and each tier" '
                 f'src="data:image/png;base64,{data}"></p>')
    for w in report.get("warnings") or []:
        if isinstance(w, dict):
            page.add(f'<p class="bad">warning {escape(str(w.get("id")))}: '
                     f'{escape(str(w.get("message")))}</p>')


def _files(page: Page, folder: Path) -> str:
    if not folder.is_dir():
        return '<p class="muted">absent</p>'
    entries = sorted(folder.iterdir(), key=lambda p: (p.is_dir(), p.name))
    entries = [p for p in entries if not p.name.startswith(".")]
    shards = [p for p in entries if p.is_file() and p.name.startswith("part_")]
    rest = [p for p in entries if p not in shards]
    items = [f"<li>{page.link(p, p.name + ('/' if p.is_dir() else ''))}</li>"
             for p in rest[:MAX_FILES]]
    if len(rest) > MAX_FILES:
        items.append(f"<li>… {len(rest) - MAX_FILES} more in {page.link(folder)}</li>")
    if shards:
        items.append(f"<li>{page.link(folder, f'{len(shards)} shards part_*')} "
                     f'<span class="muted">({sum(p.stat().st_size for p in shards):,} '
                     "bytes)</span></li>")
    return f'<ul class="files">{"".join(items)}</ul>' if items else '<p class="muted">empty</p>'


def _artifacts(page: Page) -> None:
    run = page.run
    page.add("<h2>Artifacts</h2>",
             '<p class="muted">links are relative to the output root</p><h3>the flow</h3><ul>')
    for name in ("flow_plan.json", "flow_report.json"):
        p = run.root / name
        page.add(f"<li>{page.link(p)}</li>" if p.is_file()
                 else f'<li class="muted">{escape(name)} absent</li>')
    if run.policy_path.is_file():
        page.add(f"<li>{page.link(run.policy_path)} (approved policy)</li>")
    page.add("</ul>")
    step: StepArtifacts
    for step in run.steps:
        page.add(f"<h3><code>{escape(step.spec.step_id)}</code> "
                 f"{page.link(step.output_dir) if step.output_dir.is_dir() else ''}</h3>",
                 _files(page, step.output_dir))


__all__ = ["REPORT_NAME", "Stage", "build_html", "write_report"]
