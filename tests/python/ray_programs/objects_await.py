import asyncio
import ray


@ray.remote
def square(x):
    return x * x


@ray.remote
def fail():
    raise ValueError("boom")


@ray.remote
def numbers(n):
    for i in range(n):
        yield i * 10


@ray.remote
class Echo:
    def echo(self, x):
        return x


@ray.remote
class Front:
    def __init__(self, echo):
        self.echo = echo

    async def ask(self, x):
        # An async actor awaits another actor's call.
        return await self.echo.echo.remote(x) + 1


async def main():
    print(await square.remote(4))
    print(await asyncio.gather(*[square.remote(i) for i in range(4)]))
    try:
        await fail.remote()
    except ValueError as e:
        print("raised", "boom" in str(e))
    async for ref in numbers.remote(3):
        print("item", await ref)
    done, _ = await asyncio.wait([asyncio.ensure_future(square.remote(2))], timeout=60)
    print(len(done))


asyncio.run(main())
print(square.remote(5).future().result())
front = Front.remote(Echo.remote())
print(ray.get(front.ask.remote(41)))
