"""Finding the built ``store-service`` and ``sync-service``.

Order: ``$MEOWCARE_BIN_DIR``; else the ``.build/debug`` of the MeowCare repository this package
sits in (an editable or in-repository install) or of the current directory or one of its
ancestors; else ``PATH``. A test run that finds none fails at once with the command that builds
them, rather than with a confusing spawn error later.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional

from .errors import BinariesNotFound

EXECUTABLES = ("store-service", "sync-service")
ENV_BIN_DIR = "MEOWCARE_BIN_DIR"


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


def find_binaries(bin_dir: Optional[str] = None) -> Dict[str, str]:
    """Absolute paths of the executables, by name; raises :class:`BinariesNotFound` with a fix."""
    explicit = bin_dir or os.environ.get(ENV_BIN_DIR)
    if explicit:
        directory = Path(explicit).expanduser().resolve()
        if _complete(directory):
            return {name: str(directory / name) for name in EXECUTABLES}
        missing = [name for name in EXECUTABLES if not (directory / name).is_file()]
        raise BinariesNotFound("binariesNotFound",
                               f"{ENV_BIN_DIR if not bin_dir else 'bin_dir'}={explicit} has no executable {', '.join(missing)}. "
                               "Point it at a directory of built services (e.g. <repository>/.build/debug after "
                               "'swift build --package-path <repository>').", {"binDir": explicit, "missing": missing})
    looked: List[str] = []
    repositories = repository_candidates()
    for repository in repositories:
        for configuration in ("debug", "release"):
            directory = repository / ".build" / configuration
            looked.append(str(directory))
            if _complete(directory):
                return {name: str(directory / name) for name in EXECUTABLES}
    on_path = {name: shutil.which(name) for name in EXECUTABLES}
    if all(on_path.values()):
        return {name: str(path) for name, path in on_path.items()}
    looked.append("PATH")
    where = str(repositories[0]) if repositories else "<path to the MeowCare repository>"
    raise BinariesNotFound(
        "binariesNotFound",
        "No built store-service and sync-service found (looked in " + ", ".join(looked) + "). "
        f"Build them with: swift build --package-path {where}   "
        f"or set {ENV_BIN_DIR} to the directory that holds them.",
        {"looked": looked})
