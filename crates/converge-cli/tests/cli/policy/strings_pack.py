from pulumi_policy import (
    EnforcementLevel, PolicyConfigSchema, PolicyPack,
    ResourceValidationPolicy, Severity, StackValidationPolicy,
)

STRING = "random:index/randomString:RandomString"

def min_length(args, report_violation):
    if args.resource_type != STRING:
        return
    minimum = args.get_config()["minLength"]
    length = args.props.get("length")
    if isinstance(length, (int, float)) and length < minimum:
        report_violation(f"length {int(length)} is below {minimum}")

def numeric(args, report_violation):
    if args.resource_type == STRING and args.props.get("numeric") is False:
        report_violation("strings without digits are easier to guess")

def no_special(args):
    if args.resource_type == STRING and args.props.get("special") is not False:
        props = dict(args.props)
        props["special"] = False
        return props

def max_strings(args, report_violation):
    limit = args.get_config()["max"]
    strings = [r for r in args.resources if r.resource_type == STRING]
    if len(strings) > limit:
        report_violation(f"{len(strings)} strings, at most {limit}")

PolicyPack(
    name="strings",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        ResourceValidationPolicy(
            name="min-length",
            description="Random strings are long enough.",
            severity=Severity.HIGH,
            validate=min_length,
            config_schema=PolicyConfigSchema(
                properties={"minLength": {"type": "integer", "minimum": 1, "default": 8}}),
        ),
        ResourceValidationPolicy(
            name="prefer-numeric",
            description="Random strings should have digits.",
            enforcement_level=EnforcementLevel.ADVISORY,
            validate=numeric,
        ),
        ResourceValidationPolicy(
            name="no-special",
            description="Random strings have no special characters.",
            enforcement_level=EnforcementLevel.REMEDIATE,
            remediate=no_special,
        ),
        StackValidationPolicy(
            name="max-strings",
            description="A stack has few random strings.",
            validate=max_strings,
            config_schema=PolicyConfigSchema(
                properties={"max": {"type": "integer", "default": 3}}),
        ),
    ],
)
