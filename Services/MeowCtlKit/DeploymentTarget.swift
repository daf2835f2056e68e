import Foundation
import MeowWire

/// `--dir DIR [--device NAME]`: a local deployment (deploy/meowcare-local up --dir DIR) instead of
/// sockets and credentials, for every command for people.
///
/// ```sh
/// meowctl doctor --dir /tmp/meow --device device-p     # device P and the cloud as its user
/// meowctl log --dir /tmp/meow --denied                 # the admin credential from the deployment
/// ```
extension Arguments {
    /// The options every command for people accepts besides its own.
    static let deploymentOptions: Set<String> = ["dir", "device"]

    /// The deployment named by --dir, if any.
    func deployment() throws(CommandError) -> Deployment? {
        guard let directory = value("dir") else { return nil }
        do { return try Deployment(directory: directory) } catch { throw .usage("\(error)") }
    }

    /// The device's socket: --socket PATH, or --dir DIR with --device NAME (default device-a).
    func deviceSocket(for command: String) throws(CommandError) -> String {
        if let socket = value("socket") { return socket }
        guard let deployment = try deployment() else { throw .usage("meowctl \(command) needs --socket PATH (or --dir DIR [--device NAME]).") }
        return deployment.socket(value("device") ?? "device-a")
    }

    /// The cloud's socket and a user's credential: --cloud and --credential, or from --dir for the
    /// device's user (`user`: what the device's mirror reported, if it has connected yet).
    func cloudTarget(for command: String, deviceUser user: String?) throws(CommandError) -> (socket: String, credential: String)? {
        if let cloud = value("cloud") {
            guard let credential = try self.credential() else { throw .usage("meowctl \(command) --cloud needs --credential C (the device's cloud user).") }
            return (cloud, credential)
        }
        guard let deployment = try deployment() else { return nil }
        let name = user ?? Self.deploymentUser(device: value("device") ?? "device-a")
        guard let credential = try self.credential(fallback: deployment.credentials[name]) else {
            throw .usage("The deployment in \(deployment.directory) has no credential for '\(name)'; pass --credential C.")
        }
        return (deployment.socket("sync-service"), credential)
    }

    /// The sync-service's socket and the admin credential: --socket/--credential, or from --dir.
    func adminTarget(for command: String) throws(CommandError) -> (socket: String, credential: String) {
        let deployment = try deployment()
        guard let socket = value("socket") ?? deployment?.socket("sync-service") else {
            throw .usage("meowctl \(command) needs --socket SYNC_SOCKET (or --dir DIR).")
        }
        guard let credential = try self.credential(fallback: deployment?.credentials["admin"]) else {
            throw .usage("meowctl \(command) needs --credential ADMIN (or --dir DIR).")
        }
        return (socket, credential)
    }

    /// Whose devices deploy/meowcare-local starts: olivia owns devices A and B, pablo device P.
    /// Used only until the device's mirror has connected and says who it is.
    static func deploymentUser(device: String) -> String {
        device == "device-p" ? "pablo" : "olivia"
    }
}
