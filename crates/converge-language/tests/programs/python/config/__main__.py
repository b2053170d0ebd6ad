"""Configuration and secret configuration."""

import pulumi

config = pulumi.Config()
pulumi.export("name", config.require("name"))
pulumi.export("password", config.require_secret("password"))
pulumi.export("count", config.require_int("count"))
pulumi.export("obj", config.require_object("obj"))
pulumi.export("fallback", config.get("missing") or "default")
pulumi.export("project", pulumi.get_project())
pulumi.export("stack", pulumi.get_stack())
pulumi.export("organization", pulumi.get_organization())
