"""``curate report``: one self-contained ``report.html`` for a flow's output root.

Pure building: it reads the artifacts the steps wrote (JSON and YAML files under the
root; the registry lists the steps, no step package is imported directly) and returns
HTML with inline CSS and inline SVG, no script and no network. Every string taken
from the data is HTML-escaped. See docs/report.md.
"""

from __future__ import annotations

from curator.report.collect import RunArtifacts, collect
from curator.report.page import REPORT_NAME, build_html, write_report

__all__ = ["REPORT_NAME", "RunArtifacts", "build_html", "collect", "write_report"]
