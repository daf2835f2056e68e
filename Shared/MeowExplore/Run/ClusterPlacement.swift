import MeowCareCluster

/// Which CPU a cluster's services run on when the explorer runs clusters side by side.
///
/// A schedule releases one request at a time, so a cluster's processes take turns and never need
/// two cores; left to the kernel, each request wakes a process on another core, which on a VM
/// costs about as much CPU as the request's own work. Cluster `index` goes on the `index`-th CPU
/// this process may use (round robin), so clusters side by side each keep a core of their own.
enum ClusterPlacement {
    static func cpu(forCluster index: Int) -> Int? {
        let allowed = MeowProcess.allowedCPUs()
        return allowed.isEmpty ? nil : allowed[index % allowed.count]
    }
}
