"""Jobs that outlive one process, such as the resumable, rank-sharded embed job (:mod:`.embed`).

The job is a plain function that torchrun, SLURM arrays, Ray or Spark can run. The commands call it.
"""
