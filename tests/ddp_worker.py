"""One process of the two-process (gloo) training test: run a recipe in unit vectors (its multiple-negatives
objective, gathered across the processes), evaluate the held-out queries, write a hash of this rank's
weights and whether it evaluated itself.

Started by ``torchrun --nproc_per_node 2`` from tests/test_distributed.py; not a test module itself.
"""

import hashlib
import sys
from pathlib import Path

import torch.distributed as dist

from sciembed.distributed import end_distributed_run
from sciembed.training.run import prepare

base, data, output = sys.argv[1:4]
run = prepare(
    "specter",
    base,
    data,
    output,
    {
        "max_steps": 3,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1e-3,
        "warmup_steps": 0,
        "save_strategy": "no",
        "embedding.max_length": 32,
        "ddp_backend": "gloo",
        "use_cpu": True,
        "dataloader_drop_last": True,
        "embedding.normalize": True,
        "data.held_out": 0.25,
    },
)
run.trainer.train()
metrics = run.trainer.evaluate()
digest = hashlib.sha256()
for name, tensor in sorted(run.trainer.model.state_dict().items()):
    digest.update(name.encode() + tensor.detach().cpu().numpy().tobytes())
rank = dist.get_rank()
evaluated = "evaluated" if hasattr(run.trainer, "last_evaluation") else "received"
(Path(output) / f"rank{rank}.txt").write_text(
    f"{dist.get_world_size()} {run.trainer.state.global_step} {digest.hexdigest()} {evaluated} "
    f"{metrics['eval_cite_map']!r}\n"
)
# As `sciembed train` ends: both ranks meet, leave the group and exit without Python's finalisation, in which
# gloo can abort a rank whose work is done.
end_distributed_run()
