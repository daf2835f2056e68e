/// The ops a history holds and the params each carries. The checker reads these shapes; the
/// explorer writes them. Object identity is the object's UUID (its record name in the cloud).
///
/// Writes carry every value they set and the device clock's reading when saved (`stamp`), which
/// is what the mirror's per-field merge compares. Values written by explored steps are unique
/// per write, so any value seen anywhere names the one write it came from.
public enum HistoryOp {
    /// `{entity, uuid, values: {field: value}, stamp, store?, zone?: {owner, zoneName}}` (`zone`
    /// when the step inserts straight into a share's zone); ok result `{objectID, store}`.
    public static let insert = "object.insert"
    /// `{entity, uuid, values: {field: value}, stamp}`.
    public static let update = "object.update"
    /// `{entity, uuid, stamp}`; ok result may list `cascade: [uuid]`, the objects its delete
    /// rules removed with it.
    public static let delete = "object.delete"
    /// `{entity, uuid, relationship, to: uuid, stamp}`.
    public static let link = "object.link"
    /// `{entity, uuid (the root), participants: [{user, permission}]}`; ok result `{zoneName}`.
    public static let shareCreate = "share.create"
    /// `{owner, zoneName}`.
    public static let shareAccept = "share.accept"
    /// `{owner, zoneName}`.
    public static let shareLeave = "share.leave"
    /// `{zoneName}`.
    public static let shareStop = "share.stop"
    /// `{zoneName, user, permission}` ("readOnly" or "readWrite"); adds the user when absent.
    public static let sharePermission = "share.setPermission"
    /// `{zoneName, user}`.
    public static let shareRemove = "share.removeParticipant"
    /// `{}`; ok result: the device's sync.send result.
    public static let send = "sync.send"
    /// `{}`; ok result: the device's sync.fetch result.
    public static let fetch = "sync.fetch"
    /// What a device shows after a step: `{}`; ok result `{objects: [ObservedObject]}`.
    public static let observe = "observe"
    /// `{device}`: the device's pending push delivered (a fetch follows) or lost.
    public static let pushDeliver = "push.deliver"
    public static let pushLose = "push.lose"
    /// `{kind, …the fault's own fields}`: a fault armed in the cloud or a device.
    public static let fault = "fault"
    /// `{device, point?}`: kill -9 (at a named crash point when given), then the restart.
    public static let kill = "device.kill"
    public static let restart = "device.restart"
    /// `{device?, now}`: a clock set (a device's, or the cloud's when no device).
    public static let clock = "clock.set"
    /// `{device, user}`: the device signed out and in as `user`.
    public static let accountSwitch = "account.switch"
    /// `{}`: the scheduler's settle at the end of a run (sends and fetches until quiet).
    public static let settle = "settle"
    /// A team's own step: `custom.NAME`, params as the team's step gives them.
    public static let customPrefix = "custom."
}
