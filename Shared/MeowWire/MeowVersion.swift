/// The version every executable of this package reports.
public enum MeowVersion {
    public static let current = "0.1.0"
}
