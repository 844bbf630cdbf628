# Ray Core's guide (objects): an ObjectRef's id, as programs key dicts and
# logs by it: hex() and binary() name the object, the same for the same ref.
import ray


@ray.remote
def square(x):
    return x * x


refs = [square.remote(i) for i in range(4)]
index = {ref.hex(): i for i, ref in enumerate(refs)}
ready, _ = ray.wait(refs, num_returns=len(refs))
print(sorted(index[ref.hex()] for ref in ready))
print(len(refs[0].hex()), len(refs[0].binary()), refs[0].binary().hex() == refs[0].hex())
print(len(set(index)) == len(refs), refs[0].is_nil())
put = ray.put("x")
print(put.hex() == put.hex(), put.hex() != refs[0].hex())
