import StoreWire

/// A save's routing decisions for its new objects, found by object identity. A store is read
/// for every new object at each step of the save; it is kept apart from the decision, whose
/// explanation's names a lookup would otherwise copy each time.
struct SaveRoutes {
    /// Each new object's position in the save's list of new objects.
    private let positions: [ObjectIdentifier: Int]
    private let decisions: [StoreRouter.Decision]
    private let storeIndices: [Int]
    /// The stores the new objects go to.
    let stores: Set<Int>

    /// `decisions`: one per new object, in the order of `positions`.
    init(positions: [ObjectIdentifier: Int], decisions: [StoreRouter.Decision]) {
        self.positions = positions
        self.decisions = decisions
        storeIndices = decisions.map(\.store)
        stores = Set(storeIndices)
    }

    /// A new object's position in the save's list of new objects (nil: not new in this save).
    func position(of object: ContextObject) -> Int? { positions[ObjectIdentifier(object)] }

    /// The store a new object of this save goes to.
    func store(of object: ContextObject) -> Int { storeIndices[positions[ObjectIdentifier(object)]!] }

    /// The store and the routing reason of the new object at `position`.
    func store(at position: Int) -> Int { storeIndices[position] }
    func reason(at position: Int) -> RoutingReason { decisions[position].reason }
}
