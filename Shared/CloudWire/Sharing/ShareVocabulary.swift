/// A participant's permission on a share, and a share's public permission
/// (CKShare.ParticipantPermission).
public enum SharePermission: String, CloudVocabulary {
    case none, readOnly, readWrite
    public static let vocabularyName = "a share permission"
    /// The permissions an invitation may give (an invitation at none would invite nobody).
    public static let invitable: [SharePermission] = [.readOnly, .readWrite]
}

/// How a participant came to a share (CKShare.ParticipantRole): its owner, a user it invited,
/// or someone who accepted a public share.
public enum ShareRole: String, CloudVocabulary {
    case owner, privateUser, publicUser
    public static let vocabularyName = "a share role"
}

/// Where a participant stands with a share (CKShare.ParticipantAcceptanceStatus).
public enum ShareAcceptanceStatus: String, CloudVocabulary {
    case pending, accepted, removed
    public static let vocabularyName = "a share acceptance status"
}
