# Ray Core's guide (environment dependencies, "Library development"): local
# packages given to ray.init as runtime_env's py_modules, by path and as a
# module object, import in the job's tasks and actors, not in the driver.
import os
import shutil
import sys
import tempfile

root = tempfile.mkdtemp(prefix="py-modules-")
for name, body in (("greetings", "def hello(who):\n    return f'hello {who}'\n"),
                   ("farewells", "def bye(who):\n    return f'bye {who}'\n")):
    os.makedirs(os.path.join(root, name))
    with open(os.path.join(root, name, "__init__.py"), "w") as f:
        f.write(body)
sys.path.insert(0, root)
import farewells  # noqa: E402  (a module object for py_modules)
sys.path.remove(root)

import ray  # noqa: E402

ray.init(runtime_env={"py_modules": [os.path.join(root, "greetings"), farewells]})


@ray.remote
def greet(who):
    import greetings
    return greetings.hello(who)


@ray.remote
class Greeter:
    def both(self, who):
        import farewells
        import greetings
        return greetings.hello(who), farewells.bye(who)


print(ray.get(greet.remote("task")))
actor = Greeter.remote()
print(ray.get(actor.both.remote("actor")))
try:
    import greetings  # noqa: F401
except ImportError:
    print("not on the driver's path")
ray.kill(actor)
shutil.rmtree(root)
