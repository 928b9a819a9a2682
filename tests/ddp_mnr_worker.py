"""One process of the two-process (gloo) gathered-negatives test: this rank's MNR loss and gradients.

Started by ``torchrun --nproc_per_node 2`` from tests/test_distributed.py; not a test module itself. Every
rank builds the same global batch (seeded) and keeps its own half, then writes its loss and the gradients
of its own rows for the test to compare with a one-process computation on the whole batch.
"""

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from sciembed.distributed import end_distributed_run
from sciembed.training.losses import MultipleNegativesRankingLoss

dist.init_process_group("gloo")
rank, output = dist.get_rank(), Path(sys.argv[1])
torch.manual_seed(0)
anchor, positive, negative = (torch.randn(2 * 3, 8) for _ in range(3))
mine = [t[rank * 3 : (rank + 1) * 3].clone().requires_grad_() for t in (anchor, positive, negative)]
loss = MultipleNegativesRankingLoss(temperature=0.05)(*mine)
local = MultipleNegativesRankingLoss(temperature=0.05, gather_across_processes=False)(*[t.detach() for t in mine])
loss.backward()
(output / f"mnr{rank}.json").write_text(
    json.dumps({"loss": loss.item(), "local_loss": local.item(), "grads": [t.grad.tolist() for t in mine]})
)
# As the library's commands end: both ranks meet, leave the group and exit without Python's finalisation, in
# which gloo can abort a rank whose work is done ("terminate called without an active exception").
end_distributed_run()
