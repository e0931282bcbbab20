"""The compiled policy cache: a warm proxy start loads the policy without importing PyYAML.

Every client launch starts one proxy per server, and each used to parse the policy's YAML
(PyYAML alone is ~25 ms of import). The first proxy to load a policy stores it, validated, as
JSON beside the journal (``policy-<hash of the path>.json``, 0600 in the journal's 0700 folder);
the next ones use that file when it was made from exactly these bytes:

- keyed by the policy file's absolute path, size, mtime (ns) and SHA-256 of its bytes (read
  every time: an edit that keeps size and mtime still misses), and by this build's policy
  code (its version and the size and mtime of every module in ``synartesis/policy/``), so a
  new loader never trusts what an old one accepted;
- trusted only when it is a regular file owned by this user and not writable by anyone else;
- anything unexpected in it (another format, a field the model no longer has) is a miss: the
  YAML is parsed again and the cache rewritten. A malformed policy is never cached.

Standard library only (``json``, SHA-256); the loader (and PyYAML) is imported on a miss.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

from synartesis.frozen import fields, is_record
from synartesis.policy.model import CallTemplate, Policy, Rule, ServerSpec
from synartesis.policy.source import decode_policy, read_policy_bytes

__all__ = ["cache_path", "load_policy_cached"]

_FORMAT = 1

try:  # CPython's own SHA-256: hashlib would load and initialise OpenSSL on every proxy start
    from _sha256 import sha256 as _sha256  # Python 3.11
except ImportError:  # pragma: no cover - other versions and implementations
    try:
        from _sha2 import sha256 as _sha256  # Python 3.12+
    except ImportError:
        from hashlib import sha256 as _sha256
_TYPES = {cls.__name__: cls for cls in (Policy, Rule, ServerSpec, CallTemplate)}


def cache_path(policy_path: Path, cache_dir: Path) -> Path:
    """Where the compiled form of ``policy_path`` is kept in ``cache_dir`` (the journal's folder)."""
    name = _sha256(os.fsencode(os.path.abspath(policy_path))).hexdigest()[:16]
    return cache_dir / f"policy-{name}.json"


def load_policy_cached(path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None) -> Policy:
    """Load and validate the policy at ``path``, through the cache in ``cache_dir`` when given.

    Raises:
        PolicyError: as :func:`synartesis.policy.loader.load_policy` (FILE:LINE:COL).
    """
    p = Path(path)
    raw = read_policy_bytes(p)
    if cache_dir is None:
        return _parse(raw, str(p))
    try:
        st = os.stat(p)
    except OSError:
        return _parse(raw, str(p))
    key = {"format": _FORMAT, "path": os.path.abspath(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
           "sha256": _sha256(raw).hexdigest(), "code": _code_fingerprint()}
    where = cache_path(p, Path(cache_dir))
    cached = _read_cache(where, key)
    if cached is not None:
        return cached
    policy = _parse(raw, str(p))
    _write_cache(where, key, policy)
    return policy


def _parse(raw: bytes, filename: str) -> Policy:
    from synartesis.policy.loader import parse_policy  # imports PyYAML
    return parse_policy(decode_policy(raw, filename), filename)


def _code_fingerprint() -> list:
    from synartesis import __version__
    here = os.path.dirname(os.path.abspath(__file__))
    files = []
    try:
        for entry in sorted(os.scandir(here), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                s = entry.stat()
                files.append([entry.name, s.st_size, s.st_mtime_ns])
    except OSError:
        files.append(["unreadable", 0, 0])
    return [__version__, files]


def _read_cache(where: Path, key: dict) -> Policy | None:
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None  # a file someone else could have written is not trusted
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = json.loads(b"".join(chunks))
        if data.get("key") != key:
            return None
        policy = _decode(data["policy"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return policy if isinstance(policy, Policy) else None


def _write_cache(where: Path, key: dict, policy: Policy) -> None:
    """Store the compiled policy atomically (0600, folder 0700); failure only costs speed."""
    try:
        body = json.dumps({"key": key, "policy": _encode(policy)}, ensure_ascii=False, separators=(",", ":"))
        data = body.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        return
    tmp = where.with_name(f"{where.name}.{os.getpid()}.tmp")
    try:
        where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, where)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# -- the model as JSON: records and tuples tagged, user mappings escaped ----------------
def _encode(value: Any) -> Any:
    if is_record(value):
        return {"$dc": type(value).__name__, "f": {f: _encode(getattr(value, f)) for f in fields(value)}}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        inner = {k: _encode(v) for k, v in value.items()}
        return {"$dict": inner} if any(k.startswith("$") for k in value) else inner
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "$dc" in value:
            return _TYPES[value["$dc"]](**{k: _decode(v) for k, v in value["f"].items()})
        if "$tuple" in value:
            return tuple(_decode(v) for v in value["$tuple"])
        if "$dict" in value:
            return {k: _decode(v) for k, v in value["$dict"].items()}
        return {k: _decode(v) for k, v in value.items()}
    return value
