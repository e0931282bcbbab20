"""The one write path for files: client configs we do not own, and the files we do own.

Contract (DESIGN §8, CLIENTS.md §2, STYLE habits 1–2):
- :func:`replace_checked` replaces a file we do not own: the new bytes are written to a
  temporary file beside the *resolved* target (a symlinked config stays a symlink), flushed and
  fsynced, given the original's mode (and owner when running as root), then the target is
  re-read and compared with the bytes the caller planned from; if anything changed meanwhile
  (the client rewrote it) the temporary file is discarded and :class:`ConflictError` is raised —
  nothing is lost. Only then ``os.replace`` (retried briefly on Windows sharing violations,
  never falling back to truncate-and-write), fsync of the directory, and a read-back check.
- :func:`backup` keeps a timestamped copy (0600, in a 0700 directory) that is never
  overwritten, with a small ``.meta.json`` beside it naming the original path.
- :func:`atomic_write` is the same temp+fsync+replace for files synartesis owns (the user
  policy, the install record), created 0600 unless they exist with another mode.
- Temporary files are named ``.<name>.<pid>.<random>.synartesis-tmp`` beside their target and
  exist only while one write runs: an error, Ctrl+C, SIGTERM or SIGHUP removes them; after a
  SIGKILL :func:`leftover_temps` finds them (their process is gone) and the next install,
  uninstall or status removes them (issue 9 item 11).
- Folders synartesis creates are 0700 whatever the umask, every level (issue 9 item 12);
  :func:`tighten` brings a file or folder of ours back to its private mode.
No other module opens a file for writing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from synartesis.canonical import sha256_hex
from synartesis.errors import ConflictError, SynartesisError
from synartesis.paths import Env, backups_dir

__all__ = [
    "read_bytes",
    "resolve_target",
    "ensure_private_dir",
    "backup",
    "read_backup_meta",
    "replace_checked",
    "atomic_write",
    "folder_lock",
    "write_new",
    "remove_owned",
    "TEMP_SUFFIX",
    "leftover_temps",
    "remove_leftovers",
    "tighten",
]

TEMP_SUFFIX = ".synartesis-tmp"


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes (through symlinks), or None when it does not exist.

    Raises:
        SynartesisError: it exists but cannot be read.
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SynartesisError(f"{path} is a directory") from None
    except OSError as exc:
        raise SynartesisError(f"cannot read {path}: {exc.strerror or exc}") from None


def resolve_target(path: Path) -> Path:
    """The real file behind ``path`` (symlinks followed) — the one we must write."""
    return Path(os.path.realpath(path))


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700, and every missing parent too, whatever the umask
    (``mkdir(parents=True)`` gives parents the umask's mode: 0777 at umask 000); tighten
    ``path`` itself to 0700 if it already exists. Existing parents are left alone."""
    path = Path(path)
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            pass
        if os.name == "posix":
            os.chmod(d, 0o700)  # mkdir's mode is filtered by the umask
    if os.name == "posix" and path.is_dir():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode != 0o700:
            os.chmod(path, 0o700)
    return path


def tighten(path: Path, mode: int) -> int | None:
    """Set ``path`` (a file or folder of ours) to ``mode`` if it allows more than that.

    Returns:
        The mode it had when it was changed, else None (already private, missing, not POSIX).
    """
    if os.name != "posix":
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return None
    have = stat.S_IMODE(st.st_mode)
    if have & ~mode & 0o777 == 0:
        return None
    try:
        os.chmod(path, mode)
    except OSError:
        return None
    return have


_PID_PART = re.compile(r"^(?:(\d+)\.)?[A-Za-z0-9_]+$")


def leftover_temps(target: Path, *, stale_after: float = 3600.0) -> list[Path]:
    """Temporary files of ours beside ``target`` that no running write owns.

    A name carries the pid of the process writing it: it is a leftover when that process is
    gone (or is this one), or when the file is older than ``stale_after`` seconds (the pid may
    have been reused). Names without a pid (written by older versions) count after 10 s.
    """
    target = Path(target)
    prefix = f".{target.name}."
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    out: list[Path] = []
    now = time.time()
    for name in names:
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX)):
            continue
        m = _PID_PART.match(name[len(prefix):-len(TEMP_SUFFIX)])
        if m is None:
            continue
        p = target.parent / name
        try:
            age = now - p.lstat().st_mtime
        except OSError:
            continue
        pid = int(m.group(1)) if m.group(1) else None
        if pid is None:
            stale = age > 10
        elif pid == os.getpid():
            stale = True
        else:
            stale = age > stale_after or not _alive(pid)
        if stale:
            out.append(p)
    return sorted(out)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True
    return True


def remove_leftovers(paths: list[Path]) -> list[Path]:
    """Delete leftover temporary files found by :func:`leftover_temps`; the ones removed."""
    done = []
    for p in paths:
        if Path(p).name.endswith(TEMP_SUFFIX):
            try:
                Path(p).unlink()
                done.append(Path(p))
            except FileNotFoundError:
                pass
            except OSError:
                pass
    return done


@contextmanager
def _removed_on_signal(paths: list[Path]) -> Iterator[None]:
    """While a temporary file exists, SIGTERM/SIGHUP remove it before they end the process
    (Ctrl+C and errors are handled by the callers' ``except BaseException``)."""
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, object] = {}

    def handler(signum: int, frame: object) -> None:
        for p in paths:
            _discard(p)
        signal.signal(signum, previous.get(signum) or signal.SIG_DFL)  # type: ignore[arg-type]
        os.kill(os.getpid(), signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for sig, prev in previous.items():
            try:
                signal.signal(sig, prev)  # type: ignore[arg-type]
            except (ValueError, OSError, TypeError):
                pass


def _slug(path: Path) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(path).strip("/\\"))
    return s[-80:] or "file"


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        if os.name == "posix":
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise


def backup(env: Env, path: Path, data: bytes, client: str = "") -> Path:
    """Keep ``data`` (the bytes of ``path`` before our change) under the backups directory.

    The name is ``<UTC timestamp>-<path slug>.bak``; an existing name is never reused. A
    ``<name>.meta.json`` beside it records the original path, client and SHA-256.

    Returns:
        The backup's path.
    Raises:
        SynartesisError: the backup could not be written (then nothing else is written).
    """
    directory = ensure_private_dir(backups_dir(env))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    base = f"{stamp}-{_slug(path)}"
    for n in range(1000):
        name = base + (f"-{n}" if n else "") + ".bak"
        target = directory / name
        try:
            _write_new(target, data, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise SynartesisError(f"cannot write the backup {target}: {exc.strerror or exc}") from None
        meta = {"schema_version": 1, "original": str(path), "client": client,
                "sha256": sha256_hex(data), "created": stamp}
        try:
            _write_new(Path(str(target) + ".meta.json"),
                       (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), 0o600)
        except OSError:
            pass  # the backup itself is what matters; the record also lists it
        return target
    raise SynartesisError(f"cannot find a free backup name for {path}")


def read_backup_meta(backup_path: Path) -> dict | None:
    """The ``.meta.json`` written beside a backup, or None."""
    try:
        meta = json.loads(Path(str(backup_path) + ".meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _replace(src: Path, dst: Path) -> None:
    attempts = 10 if sys.platform.startswith("win") else 1
    for i in range(attempts):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if i == attempts - 1:
                raise
            time.sleep(0.05 * (i + 1))


def _discard(tmp: Path) -> None:
    """Remove a temporary file that will not be used (best effort)."""
    try:
        Path(tmp).unlink()
    except OSError:
        pass


def _temp_beside(target: Path, data: bytes, mode: int, owner: tuple[int, int] | None,
                 live: list[Path] | None = None) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=target.parent)
    tmp = Path(name)
    if live is not None:
        live.append(tmp)  # from now on a SIGTERM removes it
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if owner is not None:
            try:
                os.chown(tmp, *owner)
            except OSError:
                pass
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def replace_checked(path: Path, expected: bytes, new: bytes, *,
                    before_compare: Callable[[], None] | None = None) -> Path:
    """Replace the file at ``path`` with ``new`` if it still holds exactly ``expected``.

    ``before_compare`` runs after the temporary file is ready and before the final re-read
    (tests use it to play a client that rewrites the file at the last moment).

    Returns:
        The resolved target that was written.
    Raises:
        ConflictError: the file changed since it was read (nothing written).
        SynartesisError: it is read-only, vanished, or could not be written or verified.
    """
    target = resolve_target(path)
    try:
        st = target.stat()
    except FileNotFoundError:
        raise ConflictError(f"{path} disappeared before it could be written; nothing was changed") from None
    if os.name == "posix" and not os.access(target, os.W_OK):
        raise SynartesisError(f"{path} is read-only; not changing its permissions, nothing written")
    mode = stat.S_IMODE(st.st_mode)
    owner = (st.st_uid, st.st_gid) if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    live: list[Path] = []
    with _removed_on_signal(live):
        _replace_checked(path, target, expected, new, mode, owner, live, before_compare)
    _fsync_dir(target.parent)
    if read_bytes(target) != new:
        raise ConflictError(f"{path} was changed again right after synartesis wrote it; "
                            "check it with `synartesis status`")
    return target


def _replace_checked(path: Path, target: Path, expected: bytes, new: bytes, mode: int,
                     owner: tuple[int, int] | None, live: list[Path],
                     before_compare: Callable[[], None] | None) -> None:
    try:
        tmp = _temp_beside(target, new, mode, owner, live)
    except OSError as exc:
        raise SynartesisError(f"cannot write beside {target}: {exc.strerror or exc}") from None
    try:
        if before_compare is not None:
            before_compare()
        current = read_bytes(target)
        if current != expected:
            raise ConflictError(f"{path} changed while synartesis was working (another program "
                                "rewrote it); nothing was written — run the command again")
        try:
            _replace(tmp, target)
        except OSError as exc:
            raise SynartesisError(f"cannot replace {target}: {exc.strerror or exc}") from None
    except BaseException:
        _discard(tmp)
        raise
    finally:
        live.clear()


@contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (POSIX ``flock``) on the folder of ``path`` (symlinks
    followed) while a read-modify-write of ``path`` runs: every synartesis command that edits
    a policy (``pin --write``, ``install``) takes it, so two of them never lose each other's
    edit (adversarial reviews 15 F5, 16 F3). The folder, not the file: a file that does not
    exist yet, or is replaced meanwhile (a new inode), is covered too. Programs that do not
    lock (an editor) are caught by the caller's compare before replace
    (:func:`replace_checked`). No lock where ``fcntl`` is missing (Windows).

    Raises:
        SynartesisError: the folder cannot be opened.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks
        yield
        return
    folder = resolve_target(Path(path)).parent
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise SynartesisError(f"cannot open {folder} to lock it: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_new(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Create a file synartesis owns that must not exist yet (``O_EXCL``), fsynced.

    Raises:
        ConflictError: something created it meanwhile (nothing written).
        SynartesisError: it could not be written.
    """
    path = Path(path)
    try:
        if not path.parent.exists():
            ensure_private_dir(path.parent)
        _write_new(path, data, mode)
    except FileExistsError:
        raise ConflictError(f"{path} was created by another program while synartesis was working; "
                            "nothing was written — run the command again") from None
    except OSError as exc:
        raise SynartesisError(f"cannot write {path}: {exc.strerror or exc}") from None
    _fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write a file synartesis owns: temp file + fsync + atomic replace.

    The parent directory is created (0700) when missing; an existing file keeps its mode.

    Raises:
        SynartesisError: the file could not be written.
    """
    path = Path(path)
    target = resolve_target(path) if path.is_symlink() else path
    try:
        if not target.parent.exists():
            ensure_private_dir(target.parent)
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            pass
        live: list[Path] = []
        with _removed_on_signal(live):
            tmp = _temp_beside(target, data, mode, None, live)
            try:
                _replace(tmp, target)
            except BaseException:
                _discard(tmp)
                raise
            finally:
                live.clear()
    except OSError as exc:
        raise SynartesisError(f"cannot write {path}: {exc.strerror or exc}") from None
    _fsync_dir(target.parent)


def remove_owned(path: Path) -> bool:
    """Delete a file synartesis owns (``--purge``). True when something was removed."""
    try:
        Path(path).unlink()
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise SynartesisError(f"cannot remove {path}: {exc.strerror or exc}") from None
