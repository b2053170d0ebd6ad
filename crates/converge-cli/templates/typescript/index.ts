import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";

// A random two-word name, made by Converge's built-in random provider.
const pet = new random.RandomPet("pet", { length: 2 });

export const petName: pulumi.Output<string> = pet.id;
