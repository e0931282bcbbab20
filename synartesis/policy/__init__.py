"""Policies: the model, the YAML loader (FILE:LINE:COL errors), the matcher and references."""

from synartesis.policy.loader import load_policy, parse_policy
from synartesis.policy.model import CLASSES, GATES, CallTemplate, Policy, Rule, ServerSpec
from synartesis.policy.refs import RefError, resolve_template

__all__ = ["load_policy", "parse_policy", "Policy", "Rule", "ServerSpec", "CallTemplate",
           "CLASSES", "GATES", "RefError", "resolve_template"]
