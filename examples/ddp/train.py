"""A plain PyTorch DDP script, as torchrun would run it: everything it needs
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GLOO_SOCKET_IFNAME) comes from
the environment atl gives each rank. It checks its own results."""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")  # env:// rendezvous
    rank, world = dist.get_rank(), dist.get_world_size()

    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    expected = world * (world + 1) // 2
    assert total.item() == expected, f"allreduce gave {total.item()}, expected {expected}"

    torch.manual_seed(rank)  # different data per rank; DDP keeps the weights equal
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        loss = model(torch.randn(16, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(g, flat) for g in gathered), "parameters diverged"

    print(f"rank {rank}/{world}: allreduce sum {int(total.item())} (expected {expected}), "
          f"parameters in sync", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
