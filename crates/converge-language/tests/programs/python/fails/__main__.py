"""A program that raises."""

import pulumi

pulumi.export("before", "set")


def explode():
    raise ValueError("the program broke on purpose")


explode()
