"""Reading a policy file's bytes and text, with the messages a person needs (shared by the
loader and the compiled cache, which must not import each other's dependencies)."""

from __future__ import annotations

from pathlib import Path

from synartesis.errors import PolicyError

__all__ = ["decode_policy", "read_policy_bytes"]


def read_policy_bytes(path: Path) -> bytes:
    """The bytes of the policy file at ``path``.

    Raises:
        PolicyError: missing or unreadable (with what to do about it).
    """
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise PolicyError(f"there is no policy at {path}; run `synartesis install` or `synartesis init`, "
                          "or pass --manifest") from None
    except OSError as exc:
        raise PolicyError(f"the policy at {path} could not be read: {exc.strerror or exc}") from None


def decode_policy(raw: bytes, filename: str) -> str:
    """Policy bytes as text (UTF-8, an optional BOM dropped).

    Raises:
        PolicyError: not UTF-8 (names the byte).
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PolicyError(f"the policy is not UTF-8 text (byte {exc.start})", filename) from None
