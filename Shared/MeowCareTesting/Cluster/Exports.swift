// A test imports one module: the wire values (JSONValue, ErrorCode), the cloud's record types
// (CloudRecord, ZoneID, RecordConflict), the store's results (ManagedObject, SaveResult) and the
// checks' reports appear in the clients' signatures.
@_exported import CloudWire
@_exported import MeowWire
@_exported import MeowInspection
@_exported import StoreWire
