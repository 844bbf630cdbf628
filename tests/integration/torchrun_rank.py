"""A rank written for torchrun: it reads torchelastic's variables, joins
torch.distributed by env:// (gloo) and sums GROUP_RANK over the ranks;
torch itself reads OMP_NUM_THREADS (its intra-op threads)."""
import os

import torch
import torch.distributed as dist

NAMES = ["GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE",
         "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS"]

dist.init_process_group("gloo")
total = torch.tensor([int(os.environ["GROUP_RANK"])])
dist.all_reduce(total)
values = " ".join(f"{n}={os.environ.get(n, '-')}" for n in NAMES)
print(f"TORCHRUN rank={dist.get_rank()} {values} group_rank_sum={int(total.item())} "
      f"torch_threads={torch.get_num_threads()}", flush=True)
dist.destroy_process_group()
