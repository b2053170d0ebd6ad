"""The resource calls of tfplugin6 in full, for Converge's test providers.

PyPI's `tf` framework serves the protocol and the go-plugin handshake, but its
`ProviderServicer` simplifies the resource lifecycle: PlanResourceChange on
create never reaches the resource, the private bytes (`prior_private`,
`planned_private`, `private`) are dropped, an import stub is sent with only the
attributes the resource filled in, and a null state goes out as an empty
`DynamicValue`. The test providers need each of those, so `LifecycleServicer`
replaces the resource RPCs: a resource that subclasses `LifecycleResource` is
handed the whole request, decoded, and decides every field of the reply.
Everything else (schemas, provider configuration, data sources, validation)
stays tf's, except GetMetadata, which here lists the resources and data
sources as the protocol says (tf's lists none).

`serve(provider)` runs a provider with this servicer: tf's runner builds
`tf.provider.ProviderServicer` when it starts, so it is swapped first. It
also swaps tf's shutdown interceptor, which ends the process on
StopProvider as well as on `plugin.GRPCController/Shutdown`: in the
protocol StopProvider only asks running operations to stop (none of ours
runs long enough to need it), so here only Shutdown ends the process.
"""

import json
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Optional

import msgpack
from msgpack.ext import ExtType

import tf.provider
from tf import runner
from tf.gen import tfplugin_pb2 as pb
from tf.iface import Provider, Resource
from tf.types import Unknown
from tf.utils import Diagnostics, _to_attribute_path, read_dynamic_value

# A null object as msgpack (cty's null at any type), what Go providers send
# for "no object".
MSGPACK_NIL = b"\xc0"


class Failure(Exception):
    """An error diagnostic, raised by a resource to end the call."""

    def __init__(self, summary: str, detail: str = "", attribute: Optional[str] = None):
        super().__init__(summary)
        self.summary = summary
        self.detail = detail
        self.attribute = attribute

    def add_to(self, diags: Diagnostics) -> None:
        diags.add_error(self.summary, self.detail, path=[self.attribute] if self.attribute else None)


@dataclass
class PlanRequest:
    """PlanResourceChange's inputs. `prior` is None on create, `proposed` and
    `config` are None on delete."""

    config: Optional[dict]
    prior: Optional[dict]
    proposed: Optional[dict]
    prior_private: bytes


@dataclass
class Planned:
    """PlanResourceChange's reply."""

    state: Optional[dict]
    requires_replace: list[str] = field(default_factory=list)
    private: bytes = b""


@dataclass
class ApplyRequest:
    """ApplyResourceChange's inputs. `prior` is None on create, `planned` and
    `config` are None on delete."""

    config: Optional[dict]
    prior: Optional[dict]
    planned: Optional[dict]
    planned_private: bytes


@dataclass
class Outcome:
    """A new state (None: no object) and its private bytes: the reply of
    ApplyResourceChange and ReadResource."""

    state: Optional[dict]
    private: bytes = b""


class LifecycleResource(Resource):
    """A resource that handles whole requests. Each method may add
    diagnostics to `diags` or raise `Failure`; a diagnostic added next to a
    returned value is sent with it."""

    def __init__(self, provider: Provider):
        self.provider = provider
        self.type_name = provider.get_model_prefix() + self.get_name()

    def plan_change(self, diags: Diagnostics, request: PlanRequest) -> Planned:
        raise NotImplementedError

    def apply_change(self, diags: Diagnostics, request: ApplyRequest) -> Outcome:
        raise NotImplementedError

    def read_object(self, diags: Diagnostics, current: dict, private: bytes) -> Outcome:
        raise NotImplementedError

    def import_object(self, diags: Diagnostics, id: str) -> Outcome:
        raise Failure(f"{self.type_name} cannot be imported")

    def upgrade_state(self, diags: Diagnostics, version: int, raw: dict) -> dict:
        """`raw` is the stored state's JSON with Terraform's attribute names."""
        return raw

    # tf's Resource interface, unused: the servicer never calls these.
    def create(self, ctx, planned):
        raise NotImplementedError

    def read(self, ctx, current):
        raise NotImplementedError

    def update(self, ctx, current, planned):
        raise NotImplementedError

    def delete(self, ctx, current):
        raise NotImplementedError

    @classmethod
    def attribute_names(cls) -> list[str]:
        return [a.name for a in cls.get_schema().attributes]

    @classmethod
    def complete(cls, state: Optional[dict]) -> Optional[dict]:
        """`state` with every attribute of the schema present (null when
        missing), as cty objects are."""
        if state is None:
            return None
        return {name: state.get(name) for name in cls.attribute_names()}


def decode(value: pb.DynamicValue) -> Optional[dict]:
    """A DynamicValue as a dict (tf's `Unknown` for unknowns); None when null
    or absent."""
    return read_dynamic_value(value)


def encode(state: Optional[dict]) -> pb.DynamicValue:
    """An object value as msgpack, attributes in name order as cty writes
    them; None as msgpack nil."""
    if state is None:
        return pb.DynamicValue(msgpack=MSGPACK_NIL)
    ordered = {name: state[name] for name in sorted(state)}
    return pb.DynamicValue(msgpack=msgpack.packb(ordered, default=_unknown_as_ext))


def _unknown_as_ext(value: Any) -> Any:
    if value is Unknown:
        return ExtType(0, b"\x00")
    raise TypeError(f"cannot encode {type(value).__name__} as msgpack")


class LifecycleServicer(tf.provider.ProviderServicer):
    """tf's servicer with the resource RPCs of `LifecycleResource`s replaced."""

    def _resource(self, type_name: str, diags: Diagnostics) -> Optional[LifecycleResource]:
        try:
            klass = self._get_res_cls(type_name)
        except KeyError:
            diags.add_error(f"unknown resource type {type_name!r}")
            return None
        if not issubclass(klass, LifecycleResource):
            diags.add_error(f"{type_name} is not served by LifecycleServicer")
            return None
        return self.app.new_resource(klass)

    def _run(self, diags: Diagnostics, type_name: str, call) -> Any:
        """`call()`, or None when it raised: a `Failure` becomes its error
        diagnostic, any other exception an internal error."""
        try:
            return call()
        except Failure as failure:
            failure.add_to(diags)
        except Exception as exc:
            _internal_error(diags, type_name, exc)
        return None

    def GetMetadata(self, request, context):
        return pb.GetMetadata.Response(
            server_capabilities=pb.ServerCapabilities(plan_destroy=True, get_provider_schema_optional=True),
            resources=[pb.GetMetadata.ResourceMetadata(type_name=name) for name in self._load_res_cls_map()],
            data_sources=[pb.GetMetadata.DataSourceMetadata(type_name=name) for name in self._load_ds_cls_map()],
        )

    # On an error the reply still carries a value: no planned state, and for
    # an apply or a read the object as it was (what a failed change leaves).

    def PlanResourceChange(self, request, context):
        diags = Diagnostics()
        inst = self._resource(request.type_name, diags)
        planned = inst and self._run(
            diags,
            request.type_name,
            lambda: inst.plan_change(
                diags,
                PlanRequest(
                    config=decode(request.config),
                    prior=decode(request.prior_state),
                    proposed=decode(request.proposed_new_state),
                    prior_private=request.prior_private,
                ),
            ),
        )
        if planned is None:
            return pb.PlanResourceChange.Response(planned_state=encode(None), diagnostics=diags.to_pb())
        return pb.PlanResourceChange.Response(
            planned_state=encode(inst.complete(planned.state)),
            requires_replace=[_to_attribute_path([name]) for name in planned.requires_replace],
            planned_private=planned.private,
            diagnostics=diags.to_pb(),
        )

    def ApplyResourceChange(self, request, context):
        diags = Diagnostics()
        inst = self._resource(request.type_name, diags)
        outcome = inst and self._run(
            diags,
            request.type_name,
            lambda: inst.apply_change(
                diags,
                ApplyRequest(
                    config=decode(request.config),
                    prior=decode(request.prior_state),
                    planned=decode(request.planned_state),
                    planned_private=request.planned_private,
                ),
            ),
        )
        if outcome is None:
            return pb.ApplyResourceChange.Response(
                new_state=_given_or_null(request.prior_state),
                private=request.planned_private,
                diagnostics=diags.to_pb(),
            )
        return pb.ApplyResourceChange.Response(
            new_state=encode(inst.complete(outcome.state)),
            private=outcome.private,
            diagnostics=diags.to_pb(),
        )

    def ReadResource(self, request, context):
        diags = Diagnostics()
        inst = self._resource(request.type_name, diags)
        current = decode(request.current_state)
        if inst is not None and current is None:
            diags.add_error(f"ReadResource {request.type_name} was sent no current state")
        outcome = (
            inst
            and current is not None
            and self._run(diags, request.type_name, lambda: inst.read_object(diags, current, request.private))
        )
        if not outcome:
            return pb.ReadResource.Response(
                new_state=_given_or_null(request.current_state),
                private=request.private,
                diagnostics=diags.to_pb(),
            )
        return pb.ReadResource.Response(
            new_state=encode(inst.complete(outcome.state)),
            private=outcome.private,
            diagnostics=diags.to_pb(),
        )

    def ImportResourceState(self, request, context):
        diags = Diagnostics()
        inst = self._resource(request.type_name, diags)
        outcome = inst and self._run(diags, request.type_name, lambda: inst.import_object(diags, request.id))
        if outcome is None:
            return pb.ImportResourceState.Response(diagnostics=diags.to_pb())
        imported = pb.ImportResourceState.ImportedResource(
            type_name=request.type_name,
            state=encode(inst.complete(outcome.state)),
            private=outcome.private,
        )
        return pb.ImportResourceState.Response(imported_resources=[imported], diagnostics=diags.to_pb())

    def UpgradeResourceState(self, request, context):
        diags = Diagnostics()
        inst = self._resource(request.type_name, diags)
        upgraded = inst and self._run(diags, request.type_name, lambda: self._upgrade(inst, diags, request))
        if upgraded is None:
            return pb.UpgradeResourceState.Response(upgraded_state=encode(None), diagnostics=diags.to_pb())
        return pb.UpgradeResourceState.Response(
            upgraded_state=encode(inst.complete(upgraded)), diagnostics=diags.to_pb()
        )

    @staticmethod
    def _upgrade(inst: LifecycleResource, diags: Diagnostics, request) -> dict:
        what = f"UpgradeResourceState {request.type_name}"
        if request.raw_state.flatmap:
            raise Failure(f"{what}: a flatmap raw state is not supported; send raw_state.json")
        if not request.raw_state.json:
            raise Failure(f"{what}: raw_state.json is empty")
        try:
            raw = json.loads(request.raw_state.json)
        except json.JSONDecodeError as exc:
            raise Failure(f"{what}: the raw state is not JSON", str(exc)) from exc
        if not isinstance(raw, dict):
            raise Failure(f"{what}: the raw state is not a JSON object")
        return inst.upgrade_state(diags, request.version, raw)


def _given_or_null(value: pb.DynamicValue) -> pb.DynamicValue:
    """A state sent to us, sent back as it came; msgpack nil if absent."""
    return value if (value.msgpack or value.json) else encode(None)


def _internal_error(diags: Diagnostics, type_name: str, exc: Exception) -> None:
    """A bug or an unreadable object file: an error diagnostic, not a gRPC
    failure, with the traceback on stderr."""
    traceback.print_exc(file=sys.stderr)
    diags.add_error(f"{type_name}: internal error in the test provider: {type(exc).__name__}: {exc}")


class _ShutdownOnlyInterceptor(runner._ShutdownInterceptor):
    """tf's interceptor, reacting to go-plugin's Shutdown only."""

    def intercept_service(self, continuation, handler_call_details):
        if handler_call_details.method == "/tfplugin6.Provider/StopProvider":
            return continuation(handler_call_details)
        return super().intercept_service(continuation, handler_call_details)


def serve(provider: Provider) -> None:
    """Runs `provider` (go-plugin handshake on stdout) with `LifecycleServicer`."""
    tf.provider.ProviderServicer = LifecycleServicer
    runner._ShutdownInterceptor = _ShutdownOnlyInterceptor
    runner.run_provider(provider)
