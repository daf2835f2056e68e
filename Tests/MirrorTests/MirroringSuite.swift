import Testing

/// Every mirroring test, one at a time: each starts a sync-service and up to three
/// store-services, and the whole package's suite runs in parallel on small machines (two cores);
/// run side by side, the mirror's processes starved each other past their time limits.
@Suite("Mirroring", .serialized)
struct Mirroring {}
