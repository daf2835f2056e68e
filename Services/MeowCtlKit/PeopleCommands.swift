/// The commands for people and their `--help` texts (meowctl COMMAND --help).
enum PeopleCommands {
    static let help: [String: String] = [
        "events": EventsCommand.help,
        "sessions": SessionsCommand.help,
        "share": ShareCommand.help,
        "sync": SyncCommand.help,
        "doctor": DoctorCommand.help,
        "diff": DiffCommand.help,
        "log": LogCommand.help,
    ]
}
