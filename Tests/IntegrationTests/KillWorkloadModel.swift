import MeowWire

/// What the random-kill workload expects every device and the cloud to hold, kept from the
/// acknowledged operations only (an operation whose reply a kill took is folded in once the
/// device shows which way it went). Objects are named by their `id` attribute, since object IDs
/// differ from device to device.
struct KillWorkloadModel {
    enum Entity: String, CaseIterable { case Trip, Day, Photo, Tag }

    /// One object as the workload compares it: its text field, its to-one parent and, for a
    /// photo, its tags.
    struct Object: Equatable, CustomStringConvertible {
        var entity: Entity
        var text: String
        var parent: String?
        var tags: Set<String> = []

        var description: String { "\(entity.rawValue)(\(text)\(parent.map { ", parent \($0)" } ?? "")\(tags.isEmpty ? "" : ", tags \(tags.sorted())"))" }
    }

    struct Share {
        var zoneName: String
        var permission: String
        var accepted = false
    }

    /// The field each entity's updates change.
    static func textField(_ entity: Entity) -> String {
        switch entity {
        case .Trip, .Tag: return "name"
        case .Day: return "notes"
        case .Photo: return "caption"
        }
    }

    var objects: [String: Object] = [:]
    /// A trip's live share (one shared with alice, stopped ones removed).
    var shares: [String: Share] = [:]
    /// Trips that were shared at some time: many-to-many edits stay out of them (the mirror's
    /// rule for links made after sharing is another item of the same issue).
    var everShared: Set<String> = []
    /// The trip each tag was made for: a tag is only linked to that trip's photos.
    var tagTrip: [String: String] = [:]

    func ids(_ entity: Entity) -> [String] { objects.filter { $0.value.entity == entity }.map(\.key).sorted() }

    /// The trip an object belongs to (a tag: the trip it was made for).
    func trip(of id: String) -> String? {
        guard let object = objects[id] else { return nil }
        switch object.entity {
        case .Trip: return id
        case .Day: return object.parent
        case .Photo: return object.parent.flatMap { objects[$0]?.parent }
        case .Tag: return tagTrip[id]
        }
    }

    /// Deletes an object with the model's delete rules: a trip's days and a day's photos go with
    /// it (cascade); a deleted photo or tag leaves the other side's links (nullify).
    mutating func delete(_ id: String) {
        guard let object = objects.removeValue(forKey: id) else { return }
        switch object.entity {
        case .Trip, .Day:
            for (child, value) in objects where value.parent == id { delete(child) }
            shares[id] = nil
        case .Photo: break
        case .Tag:
            for (photo, value) in objects where value.tags.contains(id) { objects[photo]?.tags.remove(id) }
            tagTrip[id] = nil
        }
    }

    /// Trips the participant sees: shared with her, accepted.
    var participantTrips: Set<String> { Set(shares.filter { $0.value.accepted }.keys) }

    /// What an owner's device holds: everything.
    var ownerView: [String: Object] { objects }

    /// What the participant holds of trips, days and photos (tags are compared apart: an unlinked
    /// tag may stay in a share zone or out of it, as the share found it).
    var participantView: [String: Object] {
        let trips = participantTrips
        return objects.filter { $0.value.entity != .Tag && trip(of: $0.key).map(trips.contains) == true }
    }
}
