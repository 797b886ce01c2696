"""curate evaluate: what an approved policy does on labelled sets (docs/evaluate.md).

Not a flow step. It reads a policy, a language pack and labelled JSON lines, runs the
filter's own gates on them and reports false rejection, noise removal, a table per
phenomenon and which gate removed what.
"""

from curator.evaluate.labelled import LABELS, PHENOMENA, LabelledDoc, read_labelled
from curator.evaluate.measure import SCHEMA_VERSION, evaluate_policy
from curator.evaluate.paths import check_report_path
from curator.evaluate.report import render_text

__all__ = ["LABELS", "PHENOMENA", "SCHEMA_VERSION", "LabelledDoc", "check_report_path",
           "evaluate_policy", "read_labelled", "render_text"]
