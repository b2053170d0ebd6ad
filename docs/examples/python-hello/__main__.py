"""A pet name and a password, from the published SDKs; Converge's built-in
random provider serves them, so no plugin needs to be installed."""

import pulumi
import pulumi_random as random

config = pulumi.Config()

pet = random.RandomPet("pet", length=config.get_int("length") or 2)
password = random.RandomPassword("password", length=20, special=False)

pulumi.export("petName", pet.id)
pulumi.export("password", password.result)
