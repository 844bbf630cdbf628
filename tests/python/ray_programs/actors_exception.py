import ray


@ray.remote
class Account:
    def __init__(self):
        self.balance = 10

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        return self.balance


acct = Account.remote()
print(ray.get(acct.withdraw.remote(3)))
try:
    ray.get(acct.withdraw.remote(100))
except ValueError as e:
    print("refused:", "insufficient funds" in str(e))
print(ray.get(acct.withdraw.remote(2)))  # still alive, state kept
