"""Random names and a local command, with no plugin installed: Converge's
built-in random and command providers serve the published SDKs."""

import pulumi
import pulumi_command as command
import pulumi_random as random

config = pulumi.Config()
rotation = config.get("rotation") or "1"

pet = random.RandomPet("pet", length=config.get_int("length") or 2)
password = random.RandomPassword("password", length=24, keepers={"rotation": rotation})
greeting = command.local.Command(
    "greeting",
    create=pet.id.apply(lambda name: f"echo hello {name}"),
)

pulumi.export("pet", pet.id)
pulumi.export("password", password.result)
pulumi.export("greeting", greeting.stdout)
