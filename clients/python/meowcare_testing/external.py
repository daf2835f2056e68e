"""External mode: what a running ``deploy/meowcare-local`` deployment is, read from its config.

``deploy/meowcare-local up --dir DIR`` writes ``DIR/config/credentials.json`` (the admin's and
each user's credential) and one ``name = value`` config file per service, which the services
read themselves. Those files are the whole description a test needs: sockets, users, device
names; the logs are in ``DIR/logs/<service>.log``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional

from .errors import MeowError

ENV_EXTERNAL = "MEOWCARE_EXTERNAL"


@dataclass(frozen=True)
class DeployedDevice:
    device_name: str  # its --device-name (device-a)
    service: str      # its config and log name (device-a)
    socket: str
    user: str


@dataclass
class Deployment:
    directory: str
    cloud_socket: str
    admin_credential: str
    credentials: Dict[str, str]  # user → credential
    devices: Dict[str, DeployedDevice] = field(default_factory=dict)

    def log_path(self, service: str) -> str:
        return os.path.join(self.directory, "logs", f"{service}.log")

    def device_for(self, name: str) -> Optional[DeployedDevice]:
        """A test's device name against the deployment's: ``A`` ↔ ``device-a`` (or ``A`` itself)."""
        wanted = {name.lower(), f"device-{name.lower()}"}
        return next((device for key, device in self.devices.items() if key.lower() in wanted), None)


def model_name(path: Optional[str]) -> Optional[str]:
    """A model file's name as the store-service names it: a JSON model's ``name``, an Xcode model's
    bundle name (a version inside a bundle: the bundle's); MeowCare's for none. None when the file
    cannot be read (the device's start would say why)."""
    if path is None:
        return "MeowCare"
    stem, extension = os.path.splitext(os.path.basename(os.path.normpath(path)))
    parent_stem, parent_extension = os.path.splitext(os.path.basename(os.path.dirname(os.path.normpath(path))))
    if extension == ".xcdatamodel" and parent_extension == ".xcdatamodeld":
        return parent_stem
    if extension in (".xcdatamodeld", ".xcdatamodel"):
        return stem
    try:
        with open(path, encoding="utf-8") as handle:
            name = json.load(handle).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def _settings(path: str) -> Dict[str, str]:
    """A service's ``--config`` file: ``name = value`` lines, ``#`` comments."""
    settings: Dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if "=" in line and not line.lstrip().startswith("#"):
                key, _, value = line.partition("=")
                settings[key.strip()] = value.strip()
    return settings


def read_deployment(directory: str) -> Deployment:
    """The deployment in ``directory``; a clear error when there is none."""
    config = os.path.join(directory, "config")
    try:
        with open(os.path.join(config, "credentials.json"), encoding="utf-8") as handle:
            credentials: Dict[str, str] = json.load(handle)
        files = sorted(name for name in os.listdir(config) if name.endswith(".conf"))
    except OSError as error:
        raise MeowError("externalNotFound", f"{ENV_EXTERNAL}={directory}: no deployment there ({error}). Start one with "
                        f"'deploy/meowcare-local up --dir {directory}'.", {"directory": directory}) from None
    users = {user: credential for user, credential in credentials.items() if user != "admin"}
    by_credential = {credential: user for user, credential in users.items()}
    cloud_socket = None
    devices: Dict[str, DeployedDevice] = {}
    for file_name in files:
        settings = _settings(os.path.join(config, file_name))
        service = file_name[: -len(".conf")]
        if "users" in settings:
            cloud_socket = settings["socket"]
        elif "sync-socket" in settings:
            name = settings.get("device-name", service)
            devices[name] = DeployedDevice(name, service, settings["socket"], by_credential.get(settings.get("sync-credential", ""), "?"))
    if cloud_socket is None or "admin" not in credentials:
        raise MeowError("externalNotFound", f"{ENV_EXTERNAL}={directory}: no sync-service config or admin credential in {config}.",
                        {"directory": directory})
    return Deployment(directory, cloud_socket, credentials["admin"], users, devices)


def map_devices(deployment: Deployment, wanted: Mapping[str, str]) -> Dict[str, DeployedDevice]:
    """The deployment's device for each device a test wants (name → its user), checking the users agree.

    A test names its users freely (``owner``, ``participant``); each maps to the deployment user
    whose devices it was given, and must map to one user only.
    """
    users: Dict[str, str] = {}
    chosen: Dict[str, DeployedDevice] = {}
    for name, user in wanted.items():
        device = deployment.device_for(name)
        if device is None:
            raise MeowError("externalMismatch", f"{ENV_EXTERNAL}: the test wants device {name!r}; the deployment in "
                            f"{deployment.directory} has {', '.join(sorted(deployment.devices))}.", {"device": name})
        known = users.setdefault(user, device.user)
        if known != device.user:
            raise MeowError("externalMismatch", f"{ENV_EXTERNAL}: the test gives devices of user {user!r} to two deployment "
                            f"users ({known} and {device.user}).", {"user": user})
        chosen[name] = device
    return chosen
