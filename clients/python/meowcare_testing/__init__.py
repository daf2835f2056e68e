"""meowcare-testing: test fixtures and typed clients for the MeowCare store/sync pair.

::

    from meowcare_testing import Cluster, PermissionFailure

    with Cluster(devices={"A": "owner", "P": "participant"}) as cluster:
        ...

See docs/TESTING.md (section "Python") in the MeowCare repository for the whole API.
"""
from .base import Lifetime
from .cloud import Cloud, CloudUser, Hold
from .cluster import DEFAULT_DEVICES, ENV_EXTERNAL, Cluster, DeviceSpec
from .convergence import ConvergenceReport
from .device import Context, Device, ManagedObject, SaveResult
from .errors import *  # noqa: F401,F403 - the exception hierarchy is part of the API
from .errors import __all__ as _error_names
from .events import Event, EventStream
from .invariants import Finding
from .wire import Connection

__version__ = "0.1.0"

__all__ = ["Cluster", "DeviceSpec", "Device", "Context", "ManagedObject", "SaveResult", "Cloud", "CloudUser", "Hold",
           "Event", "EventStream", "ConvergenceReport", "Finding", "Connection", "Lifetime", "DEFAULT_DEVICES",
           "ENV_EXTERNAL", *_error_names]
