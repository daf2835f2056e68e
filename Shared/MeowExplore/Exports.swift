// A flow's steps and checks name the cluster's and the history's types.
@_exported import MeowCareCluster
@_exported import MeowHistory
