"""A Ray Tune search as users write it (seed 002's kind of program), on the
Ray cluster atl makes of the job's pods: 4 trials of a synthetic objective (no
data to download), each holding one CPU, so with one CPU per node the trials
run side by side on every node.

Exits 0 when all 4 trials ended, the best is the one the objective implies,
and the trials ran on more than one node.
"""
import os
import sys
import tempfile
import time

import ray
from ray import tune


def objective(config):
    x = config["x"]
    for step in range(3):
        time.sleep(0.5)  # long enough for the trials to overlap
        tune.report({"score": -(x - 3) ** 2 + step * 0.0,
                     "node": ray.util.get_node_ip_address()})


def main():
    ray.init()
    storage = os.environ.get("TUNE_STORAGE") or tempfile.mkdtemp(prefix="atl-tune-")
    tuner = tune.Tuner(
        tune.with_resources(objective, {"cpu": 1}),
        param_space={"x": tune.grid_search([1, 2, 3, 4])},
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(name="atl-tune", storage_path=storage, verbose=0),
    )
    results = tuner.fit()
    done = [r for r in results if r.error is None and r.metrics.get("training_iteration") == 3]
    nodes = sorted({r.metrics["node"] for r in done})
    best = results.get_best_result()
    print(f"trials finished: {len(done)} of {len(results)}", flush=True)
    print(f"trials ran on: {', '.join(nodes)}", flush=True)
    print(f"best x: {best.config['x']}", flush=True)
    ok = len(done) == 4 and best.config["x"] == 3 and len(nodes) >= 2
    print("TUNE SEARCH OK" if ok else "TUNE SEARCH WRONG", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
