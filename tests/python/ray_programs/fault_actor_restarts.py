# Ray Core's "Actor Fault Tolerance" page, as its docs write it: an actor
# with max_restarts is made again (its constructor run again) when its
# process dies; max_task_retries=-1 sends the call it died under again;
# once its restarts are used, calls fail with RayActorError.
import os

import ray


@ray.remote(max_restarts=4, max_task_retries=-1)
class Actor:
    def __init__(self):
        self.counter = 0

    def increment_and_possibly_fail(self):
        # Exit after every 10 tasks.
        if self.counter == 10:
            os._exit(0)
        self.counter += 1
        return self.counter


actor = Actor.remote()

# The actor will be reconstructed up to 4 times, so we can execute up to 50
# tasks successfully. The actor is reconstructed by rerunning its constructor.
# Methods that were executing when the actor died will be retried and will not
# raise a `RayActorError`. Retried methods may execute twice, once on the
# failed actor and a second time on the restarted actor.
for _ in range(50):
    counter = ray.get(actor.increment_and_possibly_fail.remote())
    print(counter)  # Prints the sequence 1-10 5 times.

# After the actor has been restarted 4 times, all subsequent methods will
# raise a `RayActorError`.
for _ in range(10):
    try:
        counter = ray.get(actor.increment_and_possibly_fail.remote())
        print(counter)  # Unreachable.
    except ray.exceptions.RayActorError:
        print("FAILURE")  # Prints 10 times.


# Without max_task_retries the call it died under fails; the next one
# reaches the restarted actor, which knows it was restarted.
@ray.remote(max_restarts=1)
class Once:
    def pid(self):
        return os.getpid()

    def die(self):
        os._exit(1)

    def restarted(self):
        return ray.get_runtime_context().was_current_actor_reconstructed


once = Once.remote()
first = ray.get(once.pid.remote())
print("restarted at first:", ray.get(once.restarted.remote()))
try:
    ray.get(once.die.remote())
except ray.exceptions.RayActorError:
    print("the call it died under failed")
print("a new process:", ray.get(once.pid.remote()) != first)
print("restarted now:", ray.get(once.restarted.remote()))
