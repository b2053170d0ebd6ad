"""Stack outputs of every kind of value."""

import pulumi

print("printed by the program")
pulumi.log.warn("a warning from the program")

pulumi.export("string", "hello")
pulumi.export("number", 42)
pulumi.export("float", 1.5)
pulumi.export("bool", True)
pulumi.export("null", None)
pulumi.export("list", [1, "two", False])
pulumi.export("dict", {"a": 1, "nested": {"b": [True]}})
pulumi.export("secret", pulumi.Output.secret("hidden"))
pulumi.export("asset", pulumi.StringAsset("contents"))
pulumi.export("archive", pulumi.AssetArchive({"a.txt": pulumi.StringAsset("a")}))

thing = pulumi.CustomResource("pkg:index:Thing", "thing", {"label": "t", "computed": None})
pulumi.export("thing_id", thing.id)
pulumi.export("thing_urn", thing.urn)
pulumi.export("computed", thing.computed)
