"""A driver of atl's own API (headnode --mode driver), as seed 002's users
write Ray programs: reserve one CPU on every worker, spread eight pieces of
work over them, gather the results.

    headnode --mode driver --workers 2 --local-workers 2 -- \
        python3 examples/driver/spread.py
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import atl  # noqa: E402


@atl.remote
def estimate_pi(samples, seed):
    import os
    import random
    rng = random.Random(seed)
    inside = sum(1 for _ in range(samples) if rng.random() ** 2 + rng.random() ** 2 <= 1.0)
    return os.environ["ATL_POD_NAME"], 4.0 * inside / samples


def main():
    atl.init()
    workers = atl.nodes()
    print(f"{len(workers)} workers: {', '.join(n['pod'] for n in workers)}", flush=True)
    pg = atl.placement_group([{"CPU": 1}] * len(workers), strategy="STRICT_SPREAD")
    pg.ready(timeout=60)
    refs = [estimate_pi.options(placement_group=pg,
                                placement_group_bundle_index=i % len(workers))
            .remote(20000, seed=random.randrange(1 << 30))
            for i in range(8)]
    results = atl.get(refs, timeout=300)
    pods = {pod for pod, _ in results}
    pi = sum(v for _, v in results) / len(results)
    print(f"gathered {len(results)} results from {len(pods)} workers: pi ~ {pi:.3f}", flush=True)
    pg.remove()
    return 0 if len(pods) == len(workers) and abs(pi - 3.1416) < 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
