"""The __NAME__ policy pack.

Run it from a project's directory with
`converge preview --policy-pack <this directory>` (or `pulumi preview`). Each policy's level and
settings can be changed without editing this file, with a JSON file passed
as `--policy-pack-config`, for example:

    {"forbidden-types": {"types": ["random:index/randomPassword:RandomPassword"]}}
"""

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)


def forbidden_types(args: ResourceValidationArgs, report_violation: ReportViolation):
    # Called for every resource, with the inputs the provider checked.
    if args.resource_type in args.get_config()["types"]:
        report_violation(f"resources of type {args.resource_type} are not allowed in this stack")


def max_resources(args: StackValidationArgs, report_violation: ReportViolation):
    # Called once, with every resource of the stack after the update.
    limit = int(args.get_config()["max"])
    if len(args.resources) > limit:
        report_violation(f"the stack has {len(args.resources)} resources; the limit is {limit}")


PolicyPack(
    name="__NAME__",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        ResourceValidationPolicy(
            name="forbidden-types",
            description="No resource of the types the configuration lists.",
            validate=forbidden_types,
            config_schema=PolicyConfigSchema(
                properties={
                    "types": {"type": "array", "items": {"type": "string"}, "default": []},
                },
            ),
        ),
        StackValidationPolicy(
            name="max-resources",
            description="A stack stays small enough to review.",
            enforcement_level=EnforcementLevel.ADVISORY,
            validate=max_resources,
            config_schema=PolicyConfigSchema(
                properties={"max": {"type": "integer", "minimum": 0, "default": 100}},
            ),
        ),
    ],
)
