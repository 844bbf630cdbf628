import ray


@ray.remote
def generator():
    for i in range(2):
        yield i
    raise Exception("error")


ref1, ref2, ref3, ref4 = generator.options(num_returns=4).remote()
print(ray.get([ref1, ref2]))
try:
    ray.get([ref3, ref4])
except Exception as error:
    print("the rest raise:", "error" in str(error))
dynamic_ref = generator.options(num_returns="dynamic").remote()
ref_generator = ray.get(dynamic_ref)
r1, r2, r3 = ref_generator
print(ray.get([r1, r2]))
try:
    ray.get(r3)
except Exception as error:
    print("the last raises:", "error" in str(error))
