"""Process-level plumbing under every other layer: the Ray cluster, engine replicas, paths, atomic writes.

    paths.py      where framesweep keeps its caches (tiny checkpoints, synthetic data, frames)
    atomic.py     the one atomic write: temp file, fsync file and folder, rename
    cluster.py    ensure_ray: join the given cluster or start a quiet local one
    local_cluster.py  a persistent local cluster for warm engines (started, recorded, stopped)
    replicas.py   ReplicaSet: dispatch to live replicas, revive dead ones, fail over
"""
