#if canImport(Glibc)
import Glibc
#endif

/// Exits with `status` (EX_USAGE 64, EX_CONFIG 78, …).
func exitNow(_ status: Int32) -> Never {
    exit(status)
}
