"""Core Data's and CloudKit's errors arrive as typed exceptions carrying code, message and details."""
import pytest

from conftest import event_values
from meowcare_testing import (CloudKitError, CoreDataError, InvalidReassignment, MeowError, MergeConflict, NotAuthenticated,
                              PartialFailure, ServerRecordChanged, UnknownOp, ValidationMultipleErrors, error_from_reply)


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_a_saved_object_cannot_change_stores(meow_cluster):
    a = meow_cluster["A"]
    event = a.insert("CareEvent", event_values("e1"))
    assert event.store == "Private"
    with a.context() as context:
        with pytest.raises(InvalidReassignment) as refused:
            context.assign(event.object_id, "Shared")
    assert refused.value.message == "Can't reassign an object to a different store once it has been saved."
    assert isinstance(refused.value, CoreDataError)


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_two_contexts_editing_one_object_meet_core_datas_merge_conflict(meow_cluster):
    a = meow_cluster["A"]
    event = a.insert("CareEvent", event_values("e1"))
    with a.context("first") as first, a.context("second") as second:
        first.set(event.object_id, {"note": "first"})
        second.set(event.object_id, {"note": "second"})
        first.save()
        with pytest.raises(MergeConflict) as conflict:
            second.save()
    assert conflict.value.core_data_code == 133020
    assert conflict.value.message == "Could not merge changes."
    assert conflict.value.conflicts[0]["objectID"] == event.object_id


@pytest.mark.meow_cluster(devices={"A": "owner"})
def test_an_unknown_op_and_a_bad_credential_are_typed_too(meow_cluster):
    with pytest.raises(UnknownOp) as unknown:
        meow_cluster["A"].call("no.suchOp")
    assert unknown.value.details["op"] == "no.suchOp"
    with pytest.raises(NotAuthenticated):
        meow_cluster["A"].sign_in("not-a-credential")


def test_codes_map_to_classes_and_unknown_codes_to_their_family():
    conflict = error_from_reply({"code": "partialFailure", "message": "1 of 1 items failed.", "details": {
        "ckErrorCode": 2, "partialErrors": {"E1": {"code": "serverRecordChanged", "message": "changed", "details": {
            "ckErrorCode": 14, "serverRecord": {"recordName": "E1"}, "clientRecord": None, "ancestorRecord": None}}}}})
    assert isinstance(conflict, PartialFailure)
    assert isinstance(conflict.partial_errors["E1"], ServerRecordChanged)
    assert conflict.partial_errors["E1"].server_record == {"recordName": "E1"}
    newer = error_from_reply({"code": "someNewCloudKitCode", "message": "m", "details": {"ckErrorCode": 99}})
    assert type(newer) is CloudKitError and newer.code == "someNewCloudKitCode"
    several = error_from_reply({"code": "validationMultipleErrors", "message": "m", "details": {"coreDataCode": 1560, "errors": [{}]}})
    assert isinstance(several, ValidationMultipleErrors) and several.errors == [{}]
    plain = error_from_reply({"code": "whatever", "message": "m"})
    assert type(plain) is MeowError and plain.details == {}
