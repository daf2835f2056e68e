// `import MeowCareTesting` gives a test the cluster, its clients and the wire types.
@_exported import MeowCareCluster
