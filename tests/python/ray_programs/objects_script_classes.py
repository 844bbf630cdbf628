import ray


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


@ray.remote
def shift(p, dx):
    return Point(p.x + dx, p.y)


print(ray.get(shift.remote(Point(1, 2), 10)))
print(ray.get(ray.remote(lambda v: v * 3).remote(5)))
