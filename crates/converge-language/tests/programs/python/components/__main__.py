"""Components with children, an explicit provider, dependencies."""

import pulumi


class Thing(pulumi.CustomResource):
    computed: pulumi.Output[str]

    def __init__(self, name, props, opts=None):
        super().__init__("pkg:index:Thing", name, {**props, "computed": None}, opts)


class Pair(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("my:index:Pair", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.left = Thing(f"{name}-left", {"side": "left"}, child)
        self.right = Thing(
            f"{name}-right", {"side": "right", "other": self.left.computed}, child
        )
        self.register_outputs({"right": self.right.computed})


explicit = pulumi.ProviderResource("pkg", "explicit", {"region": "mars"})
pair = Pair("pair")
managed = Thing(
    "managed",
    {"x": 1},
    pulumi.ResourceOptions(provider=explicit, depends_on=[pair.left], protect=False),
)

pulumi.export("right", pair.right.computed)
pulumi.export("managed_id", managed.id)
