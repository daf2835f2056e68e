/// What became of a write, or of one field of it, by the rules.
public enum WriteFate: Equatable, Sendable {
    /// The cloud ends with this value (for a delete: the record stays deleted).
    case holds
    /// A later write of the same field, made knowing this one, replaced it.
    case overwritten(by: Int)
    /// Both sides changed the field; the other edit is the later by stamp (ties: device name).
    case lostMerge(to: Int)
    /// The record was deleted, and the delete won over this edit.
    case deleted(by: Int)
    /// It reached the cloud in this send while its principal lacked write permission.
    case refused(send: Int)
    /// The rules dropped it before any send carried it (the zone was lost, the account switched).
    case discarded(at: Int, reason: String)
    /// No send of its device that took effect carried it.
    case unsent

    /// The fate in words, for explanations.
    public var words: String {
        switch self {
        case .holds: "holds"
        case let .overwritten(by): "overwritten by #\(by)"
        case let .lostMerge(to): "lost the merge to #\(to)"
        case let .deleted(by): "deleted by #\(by)"
        case let .refused(send): "refused at send #\(send)"
        case let .discarded(at, reason): "discarded at #\(at) (\(reason))"
        case .unsent: "never sent"
        }
    }

    /// Whether the rules excuse the write's absence from the end state.
    public var isExcused: Bool {
        switch self {
        case .holds, .unsent: false
        default: true
        }
    }
}

/// A write the rules kept out of the cloud for want of permission: refused by the server when
/// its send reached it, or discarded on its device when the zone was lost before any send.
public struct Refusal: Equatable, Sendable {
    public enum Kind: Sendable { case refused, discarded }

    /// The send that was refused, or the fetch (or leave) that discarded it.
    public var at: Int
    public var device: String
    /// What the writer lacked, in words ("bob had readOnly on alice/Share-1").
    public var why: String
    public var kind: Kind
}
