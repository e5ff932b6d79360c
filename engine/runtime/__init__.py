"""Process-level plumbing under every other layer: the Ray cluster, engine replicas, paths, atomic writes.

    paths.py      where framesweep keeps its caches (tiny checkpoints, synthetic data, frames)
    atomic.py     the one atomic write: temp file, fsync file and folder, rename
    cluster.py    ensure_ray: join the given cluster or start a quiet local one (from a thread that lives as
                  long as the process: Ray kills a local instance with the thread that started it)
    local_cluster.py  a persistent local cluster for warm engines (started, recorded, stopped)
    replicas.py   ReplicaSet: dispatch to live replicas, revive dead ones, fail over
"""
