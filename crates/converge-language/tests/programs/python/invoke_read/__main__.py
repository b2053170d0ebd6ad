"""A provider function and a read of an existing object."""

import pulumi

answer = pulumi.runtime.invoke("pkg:index:answer", {"question": "life"})
pulumi.export("answer", answer.value["answer"])

existing = pulumi.CustomResource(
    "pkg:index:Thing",
    "existing",
    {"color": None},
    pulumi.ResourceOptions(id=pulumi.Config().require("existing_id")),
)
pulumi.export("color", existing.color)
