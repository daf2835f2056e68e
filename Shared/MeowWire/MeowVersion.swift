/// The version every executable of this package reports (`--version`). The repository's VERSION
/// file is the release's version; scripts/version-check.py fails when this copy, the Python
/// package's or the file disagree, since a Swift constant cannot read a file outside its target.
public enum MeowVersion {
    public static let current = "0.1.0"
}
