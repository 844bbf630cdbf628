# Ray Core's guide ("Starting Ray"): ray.init() as a context manager (Ray
# shut down at the block's end), its context's address_info, and init again
# after a shutdown.
import ray

with ray.init() as context:
    print(ray.is_initialized())

    @ray.remote
    def square(x):
        return x * x

    print(ray.get([square.remote(i) for i in range(4)]))
print(ray.is_initialized())
context = ray.init()
print(bool(context.address_info["gcs_address"]), "node_ip_address" in context.address_info)
ray.shutdown()
ray.init()
print(ray.get(square.remote(5)))
