/// What `account.signOut` and `account.signIn` answer.
public struct AccountResult: Codable, Sendable, Hashable {
    public var signedIn: Bool
    /// The user signed in (absent after a sign-out).
    public var user: String?
    /// Local objects removed by the sign-out (the account's mirrored data).
    public var objectsRemoved: Int?

    public init(signedIn: Bool, user: String?, objectsRemoved: Int? = nil) {
        (self.signedIn, self.user, self.objectsRemoved) = (signedIn, user, objectsRemoved)
    }
}
