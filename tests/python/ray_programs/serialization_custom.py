import io
import threading
import ray


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


# Ray's guide: "Customized Serialization" (a serializer for a type).
ray.util.register_serializer(Point, serializer=lambda p: (p.x, p.y),
                             deserializer=lambda xy: Point(xy[0] * 10, xy[1] * 10))


@ray.remote
def norm(p):
    return p.x + p.y


print(ray.get(norm.remote(Point(1, 2))))
ray.util.deregister_serializer(Point)
print(ray.get(norm.remote(Point(1, 2))))

# "Troubleshooting": what in an object cannot be sent.
lock = threading.Lock()


def uses_lock():
    with lock:
        return 1


report = io.StringIO()
ok, failures = ray.util.inspect_serializability(uses_lock, name="uses_lock",
                                                print_file=report)
print(ok, sorted(f.path[-1] for f in failures))
print(ray.util.inspect_serializability(lambda: 1, print_file=io.StringIO())[0])
