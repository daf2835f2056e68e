"""Every error this package raises, as one hierarchy keyed by the services' error codes.

The services answer a failed request with ``{"code", "message", "details"}``: ``code`` is stable
and meant for programs, and it is CloudKit's or Core Data's name where one exists (details then
carry ``ckErrorCode`` or ``coreDataCode``). So the scheme is: one exception class per code a test
is likely to catch, chosen by the code alone (:func:`error_from_reply`), grouped under a base per
family. Every exception is a :class:`MeowError` with ``code``, ``message`` and ``details``; a code
without a class of its own still raises the family's base (decided by ``details``), so
``except MeowError as e: e.code == "…"`` always works and new service codes never break a test.

::

    MeowError
    ├── ProtocolError              the connection layer (unknownOp, missingField, invalidField, …)
    │   └── UnknownOp, MissingField, InvalidField, HelloRequired
    ├── CloudKitError              details.ckErrorCode (CKError.Code)
    │   ├── PartialFailure         .partial_errors {name: MeowError}, .saved, .deleted
    │   ├── ServerRecordChanged    .server_record, .client_record, .ancestor_record
    │   ├── TransientCloudError    .retry_after_seconds: RequestRateLimited, ServiceUnavailable, ZoneBusy
    │   └── PermissionFailure, NotAuthenticated, UnknownItem, ZoneNotFound, LimitExceeded, …
    ├── CoreDataError              details.coreDataCode, or Core Data's NSInvalidArgumentException
    │   ├── MergeConflict          .conflicts
    │   ├── ValidationError        ValidationMissingMandatoryProperty, ValidationMultipleErrors (.errors), …
    │   └── InvalidReassignment, EntityNotInStore, CrossStoreRelationship, UniquenessConstraint, …
    ├── StoreError                 the store-service's own (unknownObject, invalidPredicate, mirrorNotConfigured, …)
    └── ClientError                raised here, not by a service
        ├── ConnectionClosed, TimedOut, NetworkUnavailable   (also CloudKit codes a device may return)
        ├── ClusterStopped         a client used after its cluster stopped
        ├── ServiceStartError      a service that could not start, with its own log lines
        ├── NotSettled             cluster.settle() ran out of rounds (with every device's sync.status)
        └── BinariesNotFound       no built store-service/sync-service found
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Type


class MeowError(Exception):
    """An error with the services' shape: a stable ``code``, a ``message`` for people, ``details``."""

    def __init__(self, code: str, message: str, details: Optional[Mapping[str, Any]] = None, *, op: Optional[str] = None):
        self.code = code
        self.message = message
        self.details: Dict[str, Any] = dict(details or {})
        #: the operation whose reply carried the error (None when not from a reply)
        self.op = op
        super().__init__(f"{code}: {message}" + (f" (op {op})" if op else ""))

    @property
    def ck_error_code(self) -> Optional[int]:
        """CloudKit's ``CKError.Code`` number, when the error has a CloudKit name."""
        value = self.details.get("ckErrorCode")
        return value if isinstance(value, int) else None

    @property
    def core_data_code(self) -> Optional[int]:
        """Core Data's ``NSError`` code, when the error is one of Core Data's."""
        value = self.details.get("coreDataCode")
        return value if isinstance(value, int) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, details={self.details!r})"


# --- the connection layer -------------------------------------------------------------------

class ProtocolError(MeowError):
    """The request itself was wrong (framing, envelope, hello, an unknown op, bad params)."""


class UnknownOp(ProtocolError):
    """The service has no such operation (``unknownOp``): an older build, or a typo."""


class MissingField(ProtocolError):
    """A required parameter was missing or null; ``details["field"]`` is its JSON path."""


class InvalidField(ProtocolError):
    """A parameter had the wrong type or value; ``details["field"]`` is its JSON path."""


class HelloRequired(ProtocolError):
    """A request before ``hello`` (the clients here always say hello first)."""


# --- CloudKit --------------------------------------------------------------------------------

class CloudKitError(MeowError):
    """An error CloudKit names (``details.ckErrorCode`` is its ``CKError.Code``)."""


class PartialFailure(CloudKitError):
    """Some items of a batch failed: ``partial_errors`` maps each item's name to its own error."""

    @property
    def partial_errors(self) -> Dict[str, MeowError]:
        raw = self.details.get("partialErrors") or {}
        return {name: error_from_reply(item) for name, item in raw.items() if isinstance(item, dict)}

    @property
    def saved(self) -> List[Any]:
        return list(self.details.get("saved") or [])

    @property
    def deleted(self) -> List[Any]:
        return list(self.details.get("deleted") or [])


class ServerRecordChanged(CloudKitError):
    """The record changed on the server since the client's tag: merge and retry with the server's."""

    @property
    def server_record(self) -> Optional[Dict[str, Any]]:
        return self.details.get("serverRecord")

    @property
    def client_record(self) -> Optional[Dict[str, Any]]:
        return self.details.get("clientRecord")

    @property
    def ancestor_record(self) -> Optional[Dict[str, Any]]:
        return self.details.get("ancestorRecord")


class TransientCloudError(CloudKitError):
    """Try again later: ``retry_after_seconds`` says when (``details.retryAfterSeconds``)."""

    @property
    def retry_after_seconds(self) -> Optional[float]:
        value = self.details.get("retryAfterSeconds")
        return float(value) if isinstance(value, (int, float)) else None


class RequestRateLimited(TransientCloudError):
    pass


class ServiceUnavailable(TransientCloudError):
    pass


class ZoneBusy(TransientCloudError):
    pass


class PermissionFailure(CloudKitError):
    """CloudKit's 10: the user may not do this (a readOnly participant's write, an admin op…)."""


class NotAuthenticated(CloudKitError):
    """CloudKit's 9: no valid credential, or the account is signed out / has no account."""


class UnknownItem(CloudKitError):
    pass


class ZoneNotFound(CloudKitError):
    pass


class LimitExceeded(CloudKitError):
    pass


class QuotaExceeded(CloudKitError):
    pass


class AlreadyShared(CloudKitError):
    pass


class ChangeTokenExpired(CloudKitError):
    pass


class ReferenceViolation(CloudKitError):
    pass


class ServerRejectedRequest(CloudKitError):
    pass


class BatchRequestFailed(CloudKitError):
    pass


class InvalidArguments(CloudKitError):
    pass


class ConstraintViolation(CloudKitError):
    pass


class TooManyParticipants(CloudKitError):
    pass


class AccountTemporarilyUnavailable(CloudKitError):
    pass


class InternalError(CloudKitError):
    """A bug in a service (it logged it with its origin): attach the service's log."""


# --- Core Data -------------------------------------------------------------------------------

class CoreDataError(MeowError):
    """An error Core Data raises (``details.coreDataCode``, or an NSInvalidArgumentException)."""


class MergeConflict(CoreDataError):
    """133020 "Could not merge changes." under the error merge policy; ``conflicts`` per object."""

    @property
    def conflicts(self) -> List[Dict[str, Any]]:
        return list(self.details.get("conflicts") or [])


class InvalidReassignment(CoreDataError):
    """"Can't reassign an object to a different store once it has been saved." (assign on a permanent ID)."""


class EntityNotInStore(CoreDataError):
    pass


class CrossStoreRelationship(CoreDataError):
    """133010 "CoreData does not support persistent cross-store relationships"."""


class UniquenessConstraint(CoreDataError):
    pass


class StoreAlreadyAdded(CoreDataError):
    pass


class ValidationError(CoreDataError):
    """A Core Data validation error (15xx/16xx)."""


class ValidationInvalidValue(ValidationError):
    pass


class ValidationMissingMandatoryProperty(ValidationError):
    pass


class ValidationStringPatternMatching(ValidationError):
    pass


class ValidationRelationshipDeniedDelete(ValidationError):
    pass


class ValidationNumberTooLarge(ValidationError):
    pass


class ValidationNumberTooSmall(ValidationError):
    pass


class ValidationDateTooLate(ValidationError):
    pass


class ValidationDateTooSoon(ValidationError):
    pass


class ValidationStringTooLong(ValidationError):
    pass


class ValidationStringTooShort(ValidationError):
    pass


class ValidationRelationshipLacksMinimumCount(ValidationError):
    pass


class ValidationRelationshipExceedsMaximumCount(ValidationError):
    pass


class ValidationMultipleErrors(ValidationError):
    """1560: several validation errors; ``errors`` lists them (each code, message, objectID, property)."""

    @property
    def errors(self) -> List[Dict[str, Any]]:
        return list(self.details.get("errors") or [])


# --- the store-service's own -----------------------------------------------------------------

class StoreError(MeowError):
    """The store-service's own codes: names and IDs that do not exist, predicates, the mirror."""


class UnknownObject(StoreError):
    pass


class UnknownContext(StoreError):
    pass


class UnknownEntity(StoreError):
    pass


class UnknownAttribute(StoreError):
    pass


class UnknownStore(StoreError):
    pass


class InvalidPredicate(StoreError):
    pass


class AmbiguousStoreAssignment(StoreError):
    pass


class MirrorNotConfigured(StoreError):
    pass


# --- raised by this package ------------------------------------------------------------------

class ClientError(MeowError):
    """Raised by this package itself (the transport, the cluster), not answered by a service."""


class ConnectionClosed(ClientError):
    """The connection ended before the reply (the service stopped or crashed: see its log)."""


class TimedOut(ClientError):
    """No reply within the request's timeout (or ``admin.awaitHeldRequests`` gave up)."""


class NetworkUnavailable(ClientError):
    """Connecting failed (``details.errno``, ``details.path``); from a device: the cloud is down."""


class ClusterStopped(ClientError):
    """A client was used after its cluster stopped (after the ``with`` block or the fixture)."""


class ServiceStartError(ClientError):
    """A service could not start; the message ends with that service's own log lines."""

    def __init__(self, service: str, reason: str, log_lines: List[str], exit_status: Optional[int] = None):
        self.service = service
        self.log_lines = list(log_lines)
        self.exit_status = exit_status
        shown = self.log_lines[-40:]
        text = f"{service} could not start: {reason}"
        text += f"\n--- {service}'s log ({len(self.log_lines)} line(s)" + (", last 40" if len(self.log_lines) > 40 else "") + ") ---\n"
        text += "\n".join(shown) if shown else "(it wrote nothing)"
        super().__init__("serviceDidNotStart", text, {"service": service, "exitStatus": exit_status})


class NotSettled(ClientError):
    """``cluster.settle()`` ran out of rounds: something keeps changing or stays pending (details say what)."""


class BinariesNotFound(ClientError):
    """No built store-service and sync-service were found; the message says how to build them."""


# --- code → class ------------------------------------------------------------------------------

_BY_CODE: Dict[str, Type[MeowError]] = {
    # connection layer
    "unknownOp": UnknownOp, "missingField": MissingField, "invalidField": InvalidField, "helloRequired": HelloRequired,
    "frameTooLarge": ProtocolError, "emptyFrame": ProtocolError, "truncatedFrame": ProtocolError,
    "invalidUTF8": ProtocolError, "invalidJSON": ProtocolError, "notAnObject": ProtocolError,
    "helloAlreadyDone": ProtocolError, "unsupportedVersion": ProtocolError, "helloTimeout": ProtocolError,
    "tooManyFailedHellos": ProtocolError, "bufferBudgetExceeded": ProtocolError, "tooManyConnections": ProtocolError,
    "peerNotAllowed": ProtocolError,
    # CloudKit
    "partialFailure": PartialFailure, "serverRecordChanged": ServerRecordChanged,
    "requestRateLimited": RequestRateLimited, "serviceUnavailable": ServiceUnavailable, "zoneBusy": ZoneBusy,
    "permissionFailure": PermissionFailure, "notAuthenticated": NotAuthenticated, "unknownItem": UnknownItem,
    "zoneNotFound": ZoneNotFound, "limitExceeded": LimitExceeded, "quotaExceeded": QuotaExceeded,
    "alreadyShared": AlreadyShared, "changeTokenExpired": ChangeTokenExpired, "referenceViolation": ReferenceViolation,
    "serverRejectedRequest": ServerRejectedRequest, "batchRequestFailed": BatchRequestFailed,
    "invalidArguments": InvalidArguments, "constraintViolation": ConstraintViolation,
    "tooManyParticipants": TooManyParticipants, "accountTemporarilyUnavailable": AccountTemporarilyUnavailable,
    "internalError": InternalError,
    # transport (client side, and CloudKit codes a device returns when the cloud is unreachable)
    "connectionClosed": ConnectionClosed, "timedOut": TimedOut, "networkUnavailable": NetworkUnavailable,
    # Core Data
    "mergeConflict": MergeConflict, "invalidReassignment": InvalidReassignment, "entityNotInStore": EntityNotInStore,
    "crossStoreRelationship": CrossStoreRelationship, "uniquenessConstraint": UniquenessConstraint,
    "storeAlreadyAdded": StoreAlreadyAdded, "validationInvalidValue": ValidationInvalidValue,
    "validationMissingMandatoryProperty": ValidationMissingMandatoryProperty,
    "validationStringPatternMatching": ValidationStringPatternMatching,
    "validationRelationshipDeniedDelete": ValidationRelationshipDeniedDelete,
    "validationMultipleErrors": ValidationMultipleErrors,
    "validationNumberTooLarge": ValidationNumberTooLarge,
    "validationNumberTooSmall": ValidationNumberTooSmall,
    "validationDateTooLate": ValidationDateTooLate,
    "validationDateTooSoon": ValidationDateTooSoon,
    "validationStringTooLong": ValidationStringTooLong,
    "validationStringTooShort": ValidationStringTooShort,
    "validationRelationshipLacksMinimumCount": ValidationRelationshipLacksMinimumCount,
    "validationRelationshipExceedsMaximumCount": ValidationRelationshipExceedsMaximumCount,
    # the store-service's own
    "unknownObject": UnknownObject, "unknownContext": UnknownContext, "unknownEntity": UnknownEntity,
    "unknownAttribute": UnknownAttribute, "unknownStore": UnknownStore, "invalidPredicate": InvalidPredicate,
    "ambiguousStoreAssignment": AmbiguousStoreAssignment, "mirrorNotConfigured": MirrorNotConfigured,
    # raised here
    "clusterStopped": ClusterStopped, "binariesNotFound": BinariesNotFound, "notSettled": NotSettled,
}


def error_class(code: str, details: Optional[Mapping[str, Any]] = None) -> Type[MeowError]:
    """The class for ``code``; an unlisted code falls back to its family by ``details``."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    details = details or {}
    if "ckErrorCode" in details:
        return CloudKitError
    if "coreDataCode" in details or details.get("exception") == "NSInvalidArgumentException":
        return CoreDataError
    return MeowError


def error_from_reply(error: Mapping[str, Any], op: Optional[str] = None) -> MeowError:
    """Builds the typed exception for a reply's ``error`` object ``{"code", "message", "details"}``."""
    code = str(error.get("code") or "unknown")
    message = str(error.get("message") or "")
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    return error_class(code, details)(code, message, details, op=op)


__all__ = [name for name, value in dict(globals()).items()
           if isinstance(value, type) and issubclass(value, MeowError)] + ["error_from_reply", "error_class"]
