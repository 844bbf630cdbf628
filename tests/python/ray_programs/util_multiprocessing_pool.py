import os
from ray.util.multiprocessing import Pool


def square(x):
    return x * x


def fails_on_three(x):
    if x == 3:
        raise ValueError("three")
    return x


def set_tag(tag):
    os.environ["POOL_TAG"] = tag


def tag(_):
    return os.environ.get("POOL_TAG")


# Python's multiprocessing.Pool API, each process an actor.
pool = Pool()
print(pool.map(square, range(10)))
for result in pool.imap_unordered(square, range(4)):
    pass
print(sorted(pool.imap_unordered(square, range(4))))
print(list(pool.imap(square, range(5))))
print(pool.apply(pow, (2, 5)))
print(pool.apply_async(square, (8,)).get(timeout=60))
print(pool.starmap(pow, [(2, 3), (3, 2)]))
pool.close()
pool.join()

with Pool(processes=2, initializer=set_tag, initargs=("ready",)) as pool:
    print(set(pool.map(tag, range(4))))
    try:
        pool.map(fails_on_three, range(6))
    except ValueError as e:
        print("map raised", e)
    done = pool.map_async(square, [1, 2], callback=lambda values: print("callback", sorted(values)))
    done.wait(60)
    print(done.ready(), done.successful(), done.get())

pool = Pool(2, maxtasksperchild=1)
print(pool.map(square, range(6), chunksize=1))
pool.close()
pool.join()
print("joined")
