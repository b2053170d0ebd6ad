import pulumi
import pulumi_random as random

# A random two-word name, made by Converge's built-in random provider.
pet = random.RandomPet("pet", length=2)

pulumi.export("petName", pet.id)
