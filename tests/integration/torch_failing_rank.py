"""A rank that fails as torchrun's ranks do: its main, under torchelastic's
@record, raises, and @record writes the exception to $TORCHELASTIC_ERROR_FILE
before the process exits 1. Rank 1 fails once rank 0 has said its line (both
ranks share the pod's TMPDIR); the others finish."""
import os
import time

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    rank = os.environ["RANK"]
    said = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                        "atl-test-rank0-said-" + os.environ["TORCHELASTIC_RUN_ID"])
    if rank == "1":
        deadline = time.time() + 120
        while not os.path.exists(said) and time.time() < deadline:
            time.sleep(0.05)
        raise RuntimeError(f"loss is nan at step 7 on rank {rank}\nsecond line of the message")
    print("rank", rank, "done, error file at", os.environ.get("TORCHELASTIC_ERROR_FILE"),
          flush=True)
    open(said, "w").close()


if __name__ == "__main__":
    main()
