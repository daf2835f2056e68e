/// The commands for people and their `--help` texts (meowctl COMMAND --help).
enum PeopleCommands {
    static let help: [String: String] = [
        "events": EventsCommand.help + deviceNote,
        "sessions": SessionsCommand.help + deviceNote,
        "insert": InsertCommand.help + deviceNote,
        "share": ShareCommand.help + deviceNote,
        "sync": SyncCommand.help + deviceNote,
        "doctor": DoctorCommand.help + deviceAndCloudNote,
        "diff": DiffCommand.help + deviceAndCloudNote,
        "log": LogCommand.help + adminNote,
        "snapshot": SnapshotCommand.help + adminNote,
        "schema": SchemaCommand.help + adminNote,
        "report": ReportCommand.help,
        "explore": ExploreCommand.help,
    ]

    static let adminNote = """


    A local deployment: --dir DIR (deploy/meowcare-local up --dir DIR) instead of --socket and
    --credential: its sync-service and its admin credential.
    """

    static let deviceNote = """


    A local deployment: --dir DIR [--device NAME] (deploy/meowcare-local up --dir DIR) instead of
    --socket: that device's socket (default device-a).
    """

    static let deviceAndCloudNote = """


    A local deployment: --dir DIR [--device NAME] (deploy/meowcare-local up --dir DIR) instead of
    --socket, --cloud and --credential: that device (default device-a), the deployment's cloud and
    the device's user's credential (the user the device's mirror reports; before it first
    connected, the deployment's owner of the device: pablo for device-p, olivia otherwise).
    """
}
