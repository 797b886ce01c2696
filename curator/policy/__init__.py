"""The two policy files: the candidate a profile proposes and the policy a person approves.

``candidate_policies.yaml`` is built from a profile report (:func:`build_candidate`,
``candidate.py``) and is never approved. ``approved_policy.yaml`` is made from it by
:func:`promote` (``curate approve``, ``promote.py``; ``--set`` is parsed in
``assignments.py``), which adds ``approval`` and ``thresholds``. Its schema is the
:class:`ApprovedPolicy` model (``schema.py``). The filter loads an approved policy with
:func:`load_policy` (validation, the override, ``policy.status``; ``load.py``) and checks
it against the corpus, the pack and the installed signals with :func:`check_provenance`
(``provenance.py``). See ``docs/policy.md``.
"""

from curator.policy.assignments import Threshold, parse_threshold_assignments
from curator.policy.candidate import (
    CANDIDATE_FILENAME,
    CANDIDATE_NOTE,
    build_candidate,
    candidate_bytes,
    load_candidate,
    write_candidate,
)
from curator.policy.load import LoadedPolicy, PolicyStatus, load_policy
from curator.policy.promote import APPROVED_FILENAME, promote, write_approved
from curator.policy.provenance import check_provenance
from curator.policy.schema import (
    APPROVAL_METHODS,
    REQUIRED_KEYS,
    SCHEMA_VERSION,
    ApprovedPolicy,
    validate_policy,
)

__all__ = [
    "APPROVAL_METHODS",
    "APPROVED_FILENAME",
    "CANDIDATE_FILENAME",
    "CANDIDATE_NOTE",
    "REQUIRED_KEYS",
    "SCHEMA_VERSION",
    "ApprovedPolicy",
    "LoadedPolicy",
    "PolicyStatus",
    "Threshold",
    "build_candidate",
    "candidate_bytes",
    "check_provenance",
    "load_candidate",
    "load_policy",
    "parse_threshold_assignments",
    "promote",
    "validate_policy",
    "write_approved",
    "write_candidate",
]
