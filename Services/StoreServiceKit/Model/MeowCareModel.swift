import FoundationEssentials

extension ManagedObjectModel {
    /// MeowCare's model, used when no `--model` file is given. The same text is a valid model
    /// file: `store-service --print-model > m.json` gives a starting point for another app.
    /// Every attribute is optional or has a default, as CloudKit mirroring requires
    /// (`CloudKitModelRules`); the app declares `id: String?` and `occurredAt: Date?`.
    public static let meowCareJSON = #"""
    {
      "name": "MeowCare",
      "entities": [
        {
          "name": "CareSession",
          "attributes": [
            {"name": "id", "type": "string", "preservesValueInHistoryOnDeletion": true},
            {"name": "title", "type": "string", "optional": false, "defaultValue": "Care"},
            {"name": "createdAt", "type": "date"},
            {"name": "isDefault", "type": "boolean", "optional": false, "defaultValue": false}
          ],
          "relationships": [
            {"name": "events", "destination": "CareEvent", "toMany": true, "inverse": "session", "deleteRule": "cascade"}
          ],
          "indexes": [["id"], ["isDefault"]]
        },
        {
          "name": "CareEvent",
          "attributes": [
            {"name": "id", "type": "string", "preservesValueInHistoryOnDeletion": true},
            {"name": "eventTypeRaw", "type": "string",
             "allowedValues": ["bloodGlucose", "insulin", "feeding", "water", "medication", "weight", "litter",
                               "vomit", "symptom", "vetVisit", "vaccination", "grooming", "play", "note"]},
            {"name": "occurredAt", "type": "date"},
            {"name": "updatedAt", "type": "date"},
            {"name": "value", "type": "double"},
            {"name": "note", "type": "string"}
          ],
          "relationships": [
            {"name": "session", "destination": "CareSession", "inverse": "events", "deleteRule": "nullify"}
          ],
          "indexes": [["session", "occurredAt"], ["occurredAt"]]
        }
      ],
      "configurations": [
        {"name": "Private", "scope": "private", "entities": ["CareSession", "CareEvent"]},
        {"name": "Shared", "scope": "shared", "entities": ["CareSession", "CareEvent"]}
      ],
      "orphanRepair": {
        "childEntity": "CareEvent", "relationship": "session", "parentEntity": "CareSession",
        "defaultFlag": "isDefault", "defaultValues": {"id": "default-session", "title": "Default"}
      }
    }
    """#

    /// The embedded MeowCare model.
    public static func meowCare() -> ManagedObjectModel {
        // The embedded text is checked by a test; failing here is a programming error. Its bytes
        // go to the decoder as an array: `Data`'s generic init casts at runtime, a scan of every
        // conformance record the first time (~0.3 ms of a store-service's start).
        try! load(bytes: Array(meowCareJSON.utf8))
    }
}
