/// After settling, no device differs from the cloud: what the runner found different is listed
/// in each device's `divergence`, and any line there is a failure.
public struct ConvergenceCheck: HistoryCheck {
    public let name = "convergence"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] {
        run.final.devices.filter { !$0.divergence.isEmpty }.map { device in
            CheckFailure(check: name, explanation:
                "device \(device.name) still differs from the cloud after settling: \(device.divergence.joined(separator: "; ")).")
        }
    }
}

/// After settling, `meowctl doctor` finds nothing on any device.
public struct DoctorCheck: HistoryCheck {
    public let name = "doctor"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] {
        run.final.devices.filter { !$0.doctor.isEmpty }.map { device in
            CheckFailure(check: name, explanation:
                "doctor found on device \(device.name): \(device.doctor.joined(separator: "; ")).")
        }
    }
}
