"""Process-level plumbing under every other layer: the Ray cluster, engine replicas, paths, atomic writes.

    paths.py      where framesweep keeps its caches (tiny checkpoints and their folder, synthetic data, frames)
    checkpoint.py a model entry's checkpoint on disk: its folder (model_folder) and content fingerprint, for the
                  warm key, the answer fingerprint and the export's model hash (below the backends and the results)
    atomic.py     the one atomic write: temp file, fsync file and folder, rename
    cluster.py    ensure_ray: join the given cluster or start a quiet local one (from a thread that lives as
                  long as the process: Ray kills a local instance with the thread that started it), watched:
                  its GCS or raylet gone is heard at once (cluster_lost, watching_cluster)
    local_cluster.py  a persistent local cluster for warm engines (started, recorded, stopped)
    replicas.py   ReplicaPool: dispatch to live replicas, revive dead ones, fail over
    placement.py  what an engine actor reserves (GPUs in a placement group, CPUs spread) and whether it fits
    processes.py  whether a process is alive (pid_alive)
    reaper.py     a watcher process that ends Ray's processes when the driver is killed
    secrets.py    redaction of registered secrets, which values are safe to treat as one, credentials in a URL
    secret_spellings.py  the one pattern of a secret's spellings (raw, case-changed, JSON, URL, HTML, hex,
                  base64, split across lines), read alike by Python's and Polars' regex engines
"""
