"""terraform-provider-breaker 1.0.0: a Terraform provider for Converge's tests
that breaks one rule of the resource lifecycle contract on purpose, written
with PyPI's `tf` (see lifecycle_servicer.py).

Resource `breaker_thing`: `id` (computed, = name), `name` (required, changing
it replaces the thing), `rule` (required), `value` (optional) and
`computed_value` (computed). The provider is configured with `directory` (or
$BREAKER_DIRECTORY); every thing that an apply creates or updates is
`<directory>/<name>.json` and a delete removes it, so a test can see that an
object made despite a broken contract is still tracked and destroyed.

`rule` picks what goes wrong when a thing is created or changed:

- `ok`: nothing; `computed_value` is planned as "planned" and applied so.
- `plan_noncomputed`: the plan sets `value`, which is not computed, to the
  configured value + "-changed" (a planned value for a non-computed
  attribute).
- `plan_unstable`: the plan's `computed_value` is known and different on
  every call, so a second plan disagrees with the first (an inconsistent
  final plan).
- `apply_inconsistent`: planned "planned", applied "applied" (an
  inconsistent result after apply).
- `apply_unknown`: `computed_value` left unknown by the plan and still
  unknown in the new state.
- `apply_error_with_state`: the apply creates the object and returns its new
  state together with the error "simulated failure after create".

A plan that changes nothing, a read and a delete are correct for every rule.
"""

import uuid
from typing import Any, Type

from lifecycle_servicer import (
    ApplyRequest,
    Failure,
    LifecycleResource,
    Outcome,
    Planned,
    PlanRequest,
    serve,
)
from object_files import ObjectFiles, name_problem, resolve_directory
from tf.iface import Config, DataSource, Provider, Resource
from tf.schema import Attribute, Schema
from tf.types import String, Unknown
from tf.utils import Diagnostics

DIRECTORY_ENV = "BREAKER_DIRECTORY"
RULES = (
    "ok",
    "plan_noncomputed",
    "plan_unstable",
    "apply_inconsistent",
    "apply_unknown",
    "apply_error_with_state",
)
SETTABLE = ("name", "rule", "value")


def _differs(a: Any, b: Any) -> bool:
    return a is Unknown or b is Unknown or a != b


class Thing(LifecycleResource):
    @classmethod
    def get_name(cls) -> str:
        return "thing"

    @classmethod
    def get_schema(cls) -> Schema:
        return Schema(
            attributes=[
                Attribute("id", String(), computed=True),
                Attribute("name", String(), required=True, requires_replace=True),
                Attribute("rule", String(), required=True),
                Attribute("value", String(), optional=True),
                Attribute("computed_value", String(), computed=True),
            ]
        )

    def validate(self, diags: Diagnostics, type_name: str, config: Config):
        super().validate(diags, type_name, config)
        rule, name = config.get("rule"), config.get("name")
        if isinstance(rule, str) and rule not in RULES:
            diags.add_error(f"unknown rule {rule!r}; one of {', '.join(RULES)}", path=["rule"])
        if isinstance(name, str) and name_problem(name):
            diags.add_error(f"{type_name} name {name_problem(name)}", path=["name"])

    def plan_change(self, diags: Diagnostics, request: PlanRequest) -> Planned:
        prior, proposed = request.prior, request.proposed
        if proposed is None:
            return Planned(None, private=request.prior_private)
        planned = dict(proposed)
        planned["id"] = planned["name"]
        changed = [name for name in SETTABLE if prior is None or _differs(prior.get(name), planned.get(name))]
        if not changed:
            return Planned(prior, private=request.prior_private)
        rule = planned["rule"]
        if rule not in RULES and rule is not Unknown:
            raise Failure(f"unknown rule {rule!r}; one of {', '.join(RULES)}", attribute="rule")
        planned["computed_value"] = "planned"
        if rule == "plan_noncomputed":
            configured = (request.config or {}).get("value")
            planned["value"] = (configured if isinstance(configured, str) else "") + "-changed"
        elif rule == "plan_unstable":
            planned["computed_value"] = f"planned-{uuid.uuid4()}"
        elif rule in ("apply_unknown", Unknown):
            planned["computed_value"] = Unknown
        replace = ["name"] if prior is not None and "name" in changed else []
        return Planned(planned, requires_replace=replace, private=request.prior_private)

    def apply_change(self, diags: Diagnostics, request: ApplyRequest) -> Outcome:
        files = self.provider.files()
        prior, planned = request.prior, request.planned
        if planned is None:
            files.delete(prior["name"])
            return Outcome(None)
        new = dict(planned)
        rule = new["rule"]
        if new["computed_value"] is Unknown and rule != "apply_unknown":
            new["computed_value"] = "applied"
        elif rule == "apply_inconsistent":
            new["computed_value"] = "applied"
        content = {name: new[name] for name in ("name", "rule", "value")}
        content["computed_value"] = None if new["computed_value"] is Unknown else new["computed_value"]
        if prior is not None and prior["name"] != new["name"]:
            raise Failure(f"breaker_thing {prior['name']}: name cannot change in place", attribute="name")
        files.write(new["name"], content)
        if rule == "apply_error_with_state":
            diags.add_error("simulated failure after create")
        return Outcome(new, private=request.planned_private)

    def read_object(self, diags: Diagnostics, current: dict, private: bytes) -> Outcome:
        name = current.get("name") or current.get("id")
        if self.provider.files().read(name) is None:
            return Outcome(None)
        return Outcome(current, private)


class BreakerProvider(Provider):
    def __init__(self):
        self.directory: Any = None
        self.configured = False

    def get_model_prefix(self) -> str:
        return "breaker_"

    def full_name(self) -> str:
        return "registry.opentofu.org/converge-test/breaker"

    def get_provider_schema(self, diags: Diagnostics) -> Schema:
        return Schema(attributes=[Attribute("directory", String(), optional=True)])

    def validate_config(self, diags: Diagnostics, config: Config):
        pass

    def configure_provider(self, diags: Diagnostics, config: Config):
        self.directory = resolve_directory(diags, config or {}, DIRECTORY_ENV)
        self.configured = self.directory is not None

    def files(self) -> ObjectFiles:
        if not self.configured:
            raise Failure("the breaker provider is not configured (ConfigureProvider was not called or failed)")
        if self.directory is Unknown:
            raise Failure("the breaker provider's directory is unknown", attribute="directory")
        return ObjectFiles(self.directory)

    def get_data_sources(self) -> list[Type[DataSource]]:
        return []

    def get_resources(self) -> list[Type[Resource]]:
        return [Thing]


if __name__ == "__main__":
    serve(BreakerProvider())
