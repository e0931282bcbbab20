"""Policies: the model, the YAML loader (FILE:LINE:COL errors), the matcher and references.

The loader (and PyYAML) and the references are imported only when one of their names is used,
so the proxy can load a compiled policy (:mod:`synartesis.policy.cache`) without them.
"""

from __future__ import annotations

from synartesis.policy.model import CLASSES, GATES, CallTemplate, Policy, Rule, ServerSpec

__all__ = ["CLASSES", "GATES", "CallTemplate", "Policy", "RefError", "Rule", "ServerSpec", "load_policy",
           "parse_policy", "resolve_template"]


def __getattr__(name: str) -> object:
    if name in ("load_policy", "parse_policy"):
        from synartesis.policy import loader
        return getattr(loader, name)
    if name in ("RefError", "resolve_template"):
        from synartesis.policy import refs
        return getattr(refs, name)
    raise AttributeError(f"module 'synartesis.policy' has no attribute {name!r}")
