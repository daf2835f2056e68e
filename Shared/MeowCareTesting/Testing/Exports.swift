// `import MeowCareTesting` gives a test the cluster, its clients and the wire types.
@_exported import MeowCareCluster
// The explorer (flows, schedules, shrinking, replay) and the history types its reports carry.
@_exported import MeowExplore
@_exported import MeowHistory
