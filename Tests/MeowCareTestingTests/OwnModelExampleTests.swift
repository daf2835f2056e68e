import MeowCareTesting
import Testing

/// docs/TESTING.md ("Your own model") quotes the test below as it stands; scripts/docs-check.py
/// fails when the two part.
@Suite struct OwnModelExampleTests {
    // example: your-own-model
    @Test(.meowCluster(devices: ["phone": "olivia", "tablet": "olivia"], model: "examples/TripLog/TripLog.xcdatamodeld"))
    func tagsEditedOnOneDeviceReachTheOther() async throws {
        let cluster = try MeowCluster.current
        let (phone, tablet) = (cluster["phone"], cluster["tablet"])

        // Your own entities and attributes; a to-one or to-many relationship takes object IDs.
        let trip = try await phone.insert("Trip", ["id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Kyoto"])
        let day = try await phone.insert("Day", ["id": "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "dayNumber": 1,
                                                 "trip": .string(trip.objectID)])
        let photo = try await phone.insert("Photo", ["id": "1B4E28BA-2FA1-11D2-883F-0016D3CCA427", "caption": "Torii gates",
                                                     "day": .string(day.objectID)])
        let shrine = try await phone.insert("Tag", ["id": "C56A4180-65AA-42EC-A945-5FD21DEC0538", "name": "shrine"])
        let autumn = try await phone.insert("Tag", ["id": "A8098C1A-F86E-11DA-BD1A-00112444BE1E", "name": "autumn"])

        // A many-to-many takes the whole set, or {"add": [...], "remove": [...]}.
        try await phone.update(photo.objectID, ["tags": [.string(shrine.objectID)]])
        try await phone.update(photo.objectID, ["tags": ["add": [.string(autumn.objectID)]]])
        try await cluster.settle()

        // An object ID names an object in one device's store; the same object on another device
        // has another ID. Find it by its attributes, or by `uuid` (its record name in the cloud).
        let photoOnTablet = try #require(try await tablet.fetch("Photo", where: "caption == %@", ["Torii gates"]).first)
        #expect(photoOnTablet.uuid == photo.uuid)
        #expect(photoOnTablet.objectID != photo.objectID)
        let tagsOnTablet = try await tablet.fetch("Tag", where: "ANY photos.caption == %@", ["Torii gates"], sortedBy: [.ascending("name")])
        #expect(tagsOnTablet.map { $0["name"] } == ["autumn", "shrine"])

        // The tablet removes a tag; the phone sees the link go and the tag stay.
        let shrineOnTablet = try #require(tagsOnTablet.last)
        try await tablet.update(photoOnTablet.objectID, ["tags": ["remove": [.string(shrineOnTablet.objectID)]]])
        try await cluster.settle()
        #expect(try await phone.object(photo.objectID)["tags"] == [.string(autumn.objectID)])
        #expect(try await phone.count("Tag") == 2)
        try await cluster.assertConverged()
    }
    // end example
}
