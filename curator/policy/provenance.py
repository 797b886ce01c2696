"""The provenance check: a policy applies only where it was measured (corpus, pack, signals)."""

from __future__ import annotations

from curator.errors import CuratorError
from curator.policy.load import LoadedPolicy
from curator.signals.registry import IMPL_VERSION


def check_provenance(
    policy: LoadedPolicy,
    *,
    corpus_fingerprint: str,
    langpack_content_hash: str | None,
    impl_version: str = IMPL_VERSION,
    configured_langpack_hash: str | None = None,
) -> None:
    """Refuse a policy measured on other signals, another corpus or another pack.

    ``corpus_fingerprint`` is that of the readable input files, ``langpack_content_hash``
    that of the loaded pack, ``configured_langpack_hash`` the config's
    ``heuristic_filters.langpack_content_hash`` (checked when given).
    """
    if policy.signals_impl_version != impl_version:
        raise CuratorError(
            "signals_impl_version_mismatch",
            f"policy {policy.path} was measured with signals {policy.signals_impl_version!r}; "
            f"installed signals are {impl_version!r}: re-profile and re-approve",
            policy=policy.signals_impl_version, installed=impl_version,
        )
    if policy.corpus_fingerprint != corpus_fingerprint:
        raise CuratorError(
            "approval_corpus_mismatch",
            f"policy {policy.path} was approved for corpus {policy.corpus_fingerprint!r}, "
            f"but the input's fingerprint is {corpus_fingerprint!r}",
            policy=policy.corpus_fingerprint, input=corpus_fingerprint,
        )
    pack_hash = policy.langpack_content_hash
    if pack_hash is None:
        raise CuratorError("policy_langpack_mismatch",
                           f"policy {policy.path} records no langpack.content_hash")
    if pack_hash != langpack_content_hash:
        raise CuratorError(
            "policy_langpack_mismatch",
            f"policy {policy.path} was measured with pack {pack_hash!r}; the loaded pack is "
            f"{langpack_content_hash!r}",
            policy=pack_hash, loaded=langpack_content_hash,
        )
    if configured_langpack_hash is not None and configured_langpack_hash != pack_hash:
        raise CuratorError(
            "policy_langpack_mismatch",
            f"policy {policy.path} was measured with pack {pack_hash!r}; the config pins "
            f"langpack_content_hash {configured_langpack_hash!r}",
            policy=pack_hash, configured=configured_langpack_hash,
        )
