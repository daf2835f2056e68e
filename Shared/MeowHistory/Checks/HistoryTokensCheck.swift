/// Each store's persistent-history tokens go up by one from save to save. A purge removes
/// tokens from the front only, so the list may start anywhere but has no gap and never repeats
/// or goes back.
public struct HistoryTokensCheck: HistoryCheck {
    public let name = "historyTokens"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] {
        var failures: [CheckFailure] = []
        for device in run.final.devices {
            for (store, tokens) in device.historyTokens.sorted(by: { $0.key < $1.key }) {
                for (earlier, later) in zip(tokens, tokens.dropFirst()) where later != earlier + 1 {
                    let what = later > earlier + 1
                        ? "jump from \(earlier) to \(later) (\(later - earlier == 2 ? "token \(earlier + 1) is" : "tokens \(earlier + 1)…\(later - 1) are") missing)"
                        : "go from \(earlier) to \(later), not up by one"
                    failures.append(CheckFailure(check: name, explanation: "device \(device.name)'s \(store) store history tokens \(what)."))
                }
            }
        }
        return failures
    }
}
