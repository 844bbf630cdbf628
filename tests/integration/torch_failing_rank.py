"""A rank that fails as torchrun's ranks do: its main, under torchelastic's
@record, raises, and @record writes the exception to $TORCHELASTIC_ERROR_FILE
before the process exits 1. Rank 1 fails; the others finish."""
import os

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    rank = os.environ["RANK"]
    if rank == "1":
        raise RuntimeError(f"loss is nan at step 7 on rank {rank}\nsecond line of the message")
    print("rank", rank, "done, error file at", os.environ.get("TORCHELASTIC_ERROR_FILE"),
          flush=True)


if __name__ == "__main__":
    main()
