"""Policies: the model, the YAML loader (FILE:LINE:COL errors), the matcher and references.

The loader (and PyYAML) is imported only when one of its names is used, so the proxy can load
a compiled policy (:mod:`synartesis.policy.cache`) without it.
"""

from typing import Any

from synartesis.policy.model import CLASSES, GATES, CallTemplate, Policy, Rule, ServerSpec
from synartesis.policy.refs import RefError, resolve_template

__all__ = ["CLASSES", "GATES", "CallTemplate", "Policy", "RefError", "Rule", "ServerSpec", "load_policy",
           "parse_policy", "resolve_template"]


def __getattr__(name: str) -> Any:
    if name in ("load_policy", "parse_policy"):
        from synartesis.policy import loader
        return getattr(loader, name)
    raise AttributeError(f"module 'synartesis.policy' has no attribute {name!r}")
