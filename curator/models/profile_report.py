"""``profile_report.json``: curate profile's completion artifact (docs/profile.md).

Typed down to every key a reader uses, ``profile_summary.md``'s renderer
(curator/profile/summary.py) included: the corpus and sample, the pack, each signal's
block (views, histogram, health, retention curve or surface, stable bands, the Curator
default), the language composition, the co-occurrence pairs and the policy simulation.
Maps keyed by data (quantile names, view names, sources) stay dicts, in the order given.
Shares and weighted counts are ``None`` where they had no denominator.
"""

from __future__ import annotations

from curator.models.producer import ArtifactModel, CompletionArtifact, Count, Number

NAME = "profile_report.json"

#: ``{p1: ..., p50: ..., p99: ...}``: a quantile by name (``None``: nothing scored)
Quantiles = dict[str, Number | None]


class ProfileCorpus(ArtifactModel):
    """The corpus profiled: its input, what was read, its sources and fingerprint."""

    glob: str | list[str] | None = None
    file_count: Count | None = None
    document_count: Count | None = None
    records_read: Count | None = None
    records_without_text: Count | None = None
    unparsable_lines: Count | None = None
    damaged_shards: Count | None = None
    source_count: Count | None = None
    source_field: str | None = None
    fingerprint: str | None = None


class Sampling(ArtifactModel):
    """The sample scored: its seed, cap, size and method."""

    seed: Count | None = None
    method: str | None = None
    sampled: Count | None = None
    max_total_docs: Count | None = None


class Langpack(ArtifactModel):
    """The language pack's ``describe()``."""

    pack_id: str | None = None
    language_tag: str | None = None
    version: str | None = None
    content_hash: str | None = None
    capabilities: list[str] | None = None


class Bounds(ArtifactModel):
    """Thresholds by the side they gate: ``min`` keeps score >= it, ``max`` score <= it
    (a key is absent when that side is open)."""

    min: Number | None = None
    max: Number | None = None


class Histogram(ArtifactModel):
    """Raw sample counts over ``bins`` equal bins: ``edges`` has one more entry than
    ``counts``."""

    bins: Count | None = None
    view: str | None = None
    edges: list[Number | None]
    counts: list[Count]


class Health(ArtifactModel):
    """How a signal's scoring went: attempted, scored, scorer failures, other non-finite."""

    documents_attempted: Count | None = None
    documents_scored: Count | None = None
    scoring_failures: Count | None = None
    non_finite_scores: Count | None = None


class RetentionPoint(ArtifactModel):
    """One swept grid point: the threshold (exact) and the micro share it keeps."""

    threshold: Number
    retained: Number | None = None


class RetentionSurface(ArtifactModel):
    """An interval signal's retention: ``retained[i][j]`` keeps
    ``min_axis[i] <= score <= max_axis[j]``; each marginal sweeps one bound alone."""

    kind: str | None = None
    min_axis: list[Number] | None = None
    max_axis: list[Number] | None = None
    retained: list[list[Number | None]] | None = None
    marginal_min: list[RetentionPoint]
    marginal_max: list[RetentionPoint]
    marginal_note: str | None = None


class StableBand(ArtifactModel):
    """A contiguous run of grid points inside ``band_search``; each end is an
    alternative single bound, not a range."""

    threshold_low: Number
    threshold_high: Number
    retained_at_threshold_low: Number | None = None
    retained_at_threshold_high: Number | None = None


class CuratorDefault(ArtifactModel):
    """The reference filter's default for a signal and the share it keeps (for
    comparison only)."""

    thresholds: Bounds
    retained: Number | None = None
    note: str | None = None


class SignalBlock(ArtifactModel):
    """One signal's distribution: its name and its views (``micro``: per document,
    ``macro``: per source), each a mapping of statistics (``p10``, ``p50``, ...); its
    histogram, health and retention (a curve of grid points for a one-sided signal, a
    surface for an interval one, ``None`` when suppressed)."""

    signal: str
    views: dict[str, Quantiles] | None = None
    per_source_quantiles: dict[str, Quantiles] | None = None
    histogram: Histogram | None = None
    n_scored: Count | None = None
    direction: str | None = None
    units: str | None = None
    impl_version: str | None = None
    health: Health | None = None
    notes: list[str] | None = None
    retention: list[RetentionPoint] | RetentionSurface | None = None
    retention_view: str | None = None
    retention_stable_bands: list[StableBand] | None = None
    curator_default: CuratorDefault | None = None


class LanguageShare(ArtifactModel):
    """One language of the sample: documents, share and the model's confidence."""

    language: str | None = None
    documents: Count | None = None
    share: Number | None = None
    confidence_p50: Number | None = None
    confidence_p10: Number | None = None


class LanguageComposition(ArtifactModel):
    """The sample's languages by the language-ID model's top label (unweighted)."""

    scored: Count | None = None
    model: str | None = None
    languages: list[LanguageShare] | None = None
    confidence: Quantiles | None = None
    note: str | None = None


class Cooccurrence(ArtifactModel):
    """Two signals' rejections at their Curator defaults (micro-weighted counts)."""

    signal_a: str
    signal_b: str
    thresholds_a: Bounds | None = None
    thresholds_b: Bounds | None = None
    rejected_by_a: Number | None = None
    rejected_by_b: Number | None = None
    rejected_by_both: Number | None = None
    share_of_a_also_rejected_by_b: Number | None = None
    share_of_b_also_rejected_by_a: Number | None = None


class SimulatedGate(ArtifactModel):
    """One gate of the policy simulation and what it removes (micro-weighted)."""

    signal: str
    thresholds: Bounds
    fails_alone: Number | None = None
    shared: Number | None = None
    unique: Number | None = None
    incremental: Number | None = None
    retention_without: Number | None = None


class SkippedGate(ArtifactModel):
    """A one-sided signal left out of the simulation, and why."""

    signal: str
    reason: str | None = None


class PolicySimulation(ArtifactModel):
    """What the candidate gates at their default points would keep, together."""

    documents: Number | None = None
    sampled_documents: Count | None = None
    weighting: str | None = None
    target_retention: Number | None = None
    gates: Count | None = None
    dropped: Number | None = None
    kept: Number | None = None
    retention: Number | None = None
    sum_of_marginals: Number | None = None
    order: list[str] | None = None
    order_note: str | None = None
    per_gate: list[SimulatedGate] | None = None
    skipped: list[SkippedGate] | None = None


class ProfileReport(CompletionArtifact):
    step_id: str | None = None
    profile_digest: str | None = None
    signals_impl_version: str | None = None
    corpus: ProfileCorpus | None = None
    sampling: Sampling | None = None
    langpack: Langpack | None = None
    notes: list[str] | None = None
    signals: list[SignalBlock] | None = None
    language_composition: LanguageComposition | None = None
    cooccurrence: list[Cooccurrence] | None = None
    policy_simulation: PolicySimulation | None = None
