# tao-k8s NCCL probe: one pod per node, one process per GPU, a short all-reduce over NCCL.
# Shipped as `python3 -c` argv to a 2-node Indexed Job (`tao-k8s render --nccl-probe`).
# Every input arrives through the environment the renderer sets: NNODES, NPROC_PER_NODE,
# NODE_RANK, MASTER_ADDR, MASTER_PORT. It prints exactly one line from rank 0 on success
# (the bus bandwidth) and one line from any rank that fails; a hang becomes a failure through
# the process-group timeout, and the Job's activeDeadlineSeconds bounds the rest.
import datetime
import os
import sys
import time

SIZE = 256 << 20  # bytes per all-reduce
WARMUP = 5
ITERS = 20
TIMEOUT = datetime.timedelta(seconds=120)


def worker(local, nnodes, gpus, node):
    import torch
    import torch.distributed as dist

    world = nnodes * gpus
    rank = node * gpus + local
    try:
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", init_method="env://", world_size=world, rank=rank, timeout=TIMEOUT)
        x = torch.ones(SIZE // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        if x[0].item() != world:
            raise RuntimeError(f"all-reduce gave {x[0].item()}, expected {world}")
        for _ in range(WARMUP):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(ITERS):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / ITERS
        busbw = SIZE * 2 * (world - 1) / world / seconds / 1e9
        if rank == 0:
            print(
                f"tao-k8s nccl-probe: OK: all-reduce of {SIZE >> 20} MiB across {world} GPUs "
                f"on {nnodes} nodes, bus bandwidth {busbw:.1f} GB/s",
                flush=True,
            )
        dist.destroy_process_group()
    except Exception as e:  # one clear line, whatever went wrong
        print(f"tao-k8s nccl-probe: FAILED on rank {rank}: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)


def main():
    import torch.multiprocessing as mp

    nnodes = int(os.environ["NNODES"])
    gpus = int(os.environ["NPROC_PER_NODE"])
    node = int(os.environ["NODE_RANK"])
    # fork, not spawn: a `python3 -c` program has no file for spawned children to import.
    try:
        mp.start_processes(worker, args=(nnodes, gpus, node), nprocs=gpus, join=True, start_method="fork")
    except mp.ProcessExitedException:
        sys.exit(1)  # the failing rank has printed why


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print(f"tao-k8s nccl-probe: FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
