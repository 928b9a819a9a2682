"""Jobs that outlive one process: the resumable, rank-sharded embed job (:mod:`.embed`), a plain function that
torchrun, SLURM arrays, Ray or Spark can run. The commands call it."""
