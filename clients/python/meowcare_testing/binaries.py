"""Finding the ``store-service`` and ``sync-service`` a cluster starts.

Order, first match wins (a directory counts when it holds both):

1. the ``bin_dir`` argument, else ``$MEOWCARE_BIN_DIR``;
2. ``$MEOWCARE_PREFIX/bin`` (where the release artefact's ``install.sh --prefix DIR`` put them);
3. the ``.build/debug`` (then ``.build/release``) of the MeowCare repository this package sits in
   (an editable or in-repository install), or of the current directory or one of its ancestors;
4. this Python environment's own ``bin`` (``sys.prefix``: ``install.sh --prefix "$VIRTUAL_ENV"``);
5. ``PATH``.

:func:`locate_binaries` says which rule matched (:attr:`Binaries.source`); a cluster keeps it as
``Cluster.binaries`` and logs it on the ``meowcare_testing`` logger. A test run that finds none
fails at once with the command that builds them, rather than with a confusing spawn error later.
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .errors import BinariesNotFound

EXECUTABLES = ("store-service", "sync-service")
ENV_BIN_DIR = "MEOWCARE_BIN_DIR"
ENV_PREFIX = "MEOWCARE_PREFIX"

LOG = logging.getLogger("meowcare_testing")


@dataclass(frozen=True)
class Binaries:
    """Where the services are, and which rule found them."""

    directory: str
    #: ``"bin_dir"``, ``"MEOWCARE_BIN_DIR"``, ``"MEOWCARE_PREFIX"``, ``"repository build"``,
    #: ``"python environment"`` or ``"PATH"``
    source: str

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @property
    def paths(self) -> Dict[str, str]:
        return {name: self.path(name) for name in EXECUTABLES}

    @property
    def summary(self) -> str:
        return f"store-service and sync-service from {self.directory} (found by {self.source})"


def _is_repository(path: Path) -> bool:
    """The MeowCare Swift package: its manifest and the two services' sources."""
    return (path / "Package.swift").is_file() and (path / "Services" / "store-service").is_dir()


def repository_candidates() -> List[Path]:
    """MeowCare repositories near this package's source and the current directory, nearest first."""
    found: List[Path] = []
    starts = [Path(__file__).resolve().parent, Path.cwd().resolve()]
    for start in starts:
        for directory in [start, *start.parents]:
            if _is_repository(directory) and directory not in found:
                found.append(directory)
                break
    return found


def _complete(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) and (directory / name).is_file() for name in EXECUTABLES)


def _explicit(directory: str, named: str, fix: str) -> Binaries:
    resolved = Path(directory).expanduser().resolve()
    if _complete(resolved):
        return Binaries(str(resolved), named)
    missing = [name for name in EXECUTABLES if not (resolved / name).is_file()]
    raise BinariesNotFound("binariesNotFound", f"{named}={directory} has no executable {', '.join(missing)}. {fix}",
                           {"binDir": str(resolved), "missing": missing})


def locate_binaries(bin_dir: Optional[str] = None, *, repositories: Optional[Sequence[Path]] = None,
                    environment_bin: Optional[str] = None) -> Binaries:
    """The services' directory and the rule that found it; raises :class:`BinariesNotFound` with a fix.

    ``repositories`` and ``environment_bin`` replace rules 3 and 4's places (tests use them to
    reach the later rules); by default they are found as the module docstring says.
    """
    build_fix = ("Point it at a directory of built services (e.g. <repository>/.build/debug after "
                 "'swift build --package-path <repository>').")
    if bin_dir:
        return _explicit(bin_dir, "bin_dir", build_fix)
    if os.environ.get(ENV_BIN_DIR):
        return _explicit(os.environ[ENV_BIN_DIR], ENV_BIN_DIR, build_fix)
    if os.environ.get(ENV_PREFIX):
        prefix = os.environ[ENV_PREFIX]
        return _explicit(os.path.join(prefix, "bin"), ENV_PREFIX,
                         f"Install the release artefact there (./install.sh --prefix {prefix}) or unset {ENV_PREFIX}.")
    looked: List[str] = []
    repositories = repository_candidates() if repositories is None else list(repositories)
    for repository in repositories:
        for configuration in ("debug", "release"):
            directory = Path(repository) / ".build" / configuration
            looked.append(str(directory))
            if _complete(directory):
                return Binaries(str(directory), "repository build")
    own = Path(environment_bin if environment_bin is not None else os.path.join(sys.prefix, "bin"))
    looked.append(str(own))
    if _complete(own):
        return Binaries(str(own), "python environment")
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and _complete(Path(entry)):
            return Binaries(str(Path(entry).resolve()), "PATH")
    looked.append("PATH")
    where = str(repositories[0]) if repositories else "<path to the MeowCare repository>"
    raise BinariesNotFound(
        "binariesNotFound",
        "No built store-service and sync-service found (looked in " + ", ".join(looked) + "). "
        f"Build them with: swift build --package-path {where}   "
        f"or install the release artefact and put its bin on PATH (or set {ENV_PREFIX}), "
        f"or set {ENV_BIN_DIR} to the directory that holds them.",
        {"looked": looked})


def find_binaries(bin_dir: Optional[str] = None) -> Dict[str, str]:
    """Absolute paths of the executables, by name (:func:`locate_binaries`' directory)."""
    return locate_binaries(bin_dir).paths
