"""terraform-provider-store: a well-behaved Terraform provider for Converge's
tests, written with PyPI's `tf` (see lifecycle_servicer.py for what it adds).

One file serves two releases, chosen by $CONVERGE_TEST_PROVIDER_VERSION (the
wrapper that terraform_mirror.rs installs sets it):

- 1.0.0: resource `store_item` at schema version 1, its text in `content`.
- 2.0.0: resource `store_item` at schema version 2, its text in `value`, a
  sensitive `secret_value`, UpgradeResourceState from version 1, and private
  data: every object is handed `{"etag":"r<revision>"}` and every later call
  checks that it came back.

The provider is configured with `directory` (or $STORE_DIRECTORY) and an
optional sensitive `token`, of which only sha256 hex reaches the object files
(`token_hash`). Objects are `<directory>/<key>.json` (object_files.py):
`{key, value | content, tags, description, revision, secret_value,
token_hash}`. A file with `value` was last written by 2.0.0, one with
`content` by 1.0.0; each release reads both.

Data source `store_item` (both releases): reads one object by `key`.
"""

import hashlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional, Type

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
from tf.iface import Config, DataSource, Provider, ReadDataContext, Resource
from tf.schema import Attribute, Schema
from tf.types import Map, Number, String, Unknown
from tf.utils import Diagnostics

VERSION_ENV = "CONVERGE_TEST_PROVIDER_VERSION"
DIRECTORY_ENV = "STORE_DIRECTORY"
DEFAULT_DESCRIPTION = "managed by store"


@dataclass(frozen=True)
class Release:
    """What differs between the two releases."""

    version: str
    schema_version: int
    text: str  # the attribute (and file key) holding the item's text
    secret_value: bool
    private_data: bool


RELEASES = {
    "1.0.0": Release("1.0.0", 1, "content", secret_value=False, private_data=False),
    "2.0.0": Release("2.0.0", 2, "value", secret_value=True, private_data=True),
}


def _release() -> Release:
    version = os.environ.get(VERSION_ENV, "")
    if version not in RELEASES:
        print(
            f"store_provider.py: set {VERSION_ENV} to one of {', '.join(RELEASES)} (got {version!r})",
            file=sys.stderr,
        )
        sys.exit(2)
    return RELEASES[version]


RELEASE = _release()


def _whole(number: Any) -> Any:
    """A number that is integral as an int (a state stored as JSON by a
    client may carry 2.0 for 2)."""
    if isinstance(number, float) and number.is_integer():
        return int(number)
    return number


def _differs(a: Any, b: Any) -> bool:
    return a is Unknown or b is Unknown or a != b


def _etag(revision: Any) -> bytes:
    return b'{"etag":"r%d"}' % _whole(revision)


def _describe_private(received: bytes) -> str:
    if not received:
        return "nothing"
    text = received.decode("utf-8", errors="replace")
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _file_text(content: dict) -> Any:
    """The item's text from an object file of either release."""
    if "value" in content:
        return content["value"]
    return content.get("content")


def _file_revision(content: dict) -> int:
    """An object written by hand without a revision counts as revision 1."""
    revision = content.get("revision")
    return 1 if revision is None else _whole(revision)


class Item(LifecycleResource):
    """`store_item`: one object file, named by `key`."""

    @classmethod
    def get_name(cls) -> str:
        return "item"

    @classmethod
    def get_schema(cls) -> Schema:
        attributes = [
            Attribute("id", String(), computed=True),
            Attribute("key", String(), required=True, requires_replace=True),
            Attribute(RELEASE.text, String(), required=True),
            Attribute("tags", Map(String()), optional=True),
            Attribute("description", String(), optional=True, computed=True),
            Attribute("size", Number(), computed=True),
            Attribute("revision", Number(), computed=True),
        ]
        if RELEASE.secret_value:
            attributes.append(Attribute("secret_value", String(), optional=True, sensitive=True))
        return Schema(version=RELEASE.schema_version, attributes=attributes)

    # The attributes a user sets: a change to any of them is a new revision.
    @staticmethod
    def _settable() -> list[str]:
        names = ["key", RELEASE.text, "tags", "description"]
        return names + (["secret_value"] if RELEASE.secret_value else [])

    def validate(self, diags: Diagnostics, type_name: str, config: Config):
        super().validate(diags, type_name, config)
        key = config.get("key")
        if isinstance(key, str) and name_problem(key):
            diags.add_error(f"{type_name} key {name_problem(key)}", path=["key"])

    # ----------------------------------------------------------------- plan

    def plan_change(self, diags: Diagnostics, request: PlanRequest) -> Planned:
        prior, proposed = request.prior, request.proposed
        if proposed is None:
            self._check_private(prior["key"], request.prior_private)
            return Planned(None, private=request.prior_private)
        key = proposed["key"]
        if isinstance(key, str) and name_problem(key):
            raise Failure(f"{self.type_name} key {name_problem(key)}", attribute="key")
        planned = dict(proposed)
        planned["id"] = key
        if planned["description"] is None:
            planned["description"] = DEFAULT_DESCRIPTION
        text = planned[RELEASE.text]
        planned["size"] = len(text) if isinstance(text, str) else (None if text is None else Unknown)
        if prior is None:
            planned["revision"] = 1
            return Planned(planned)
        self._check_private(prior["key"], request.prior_private)
        changed = [name for name in self._settable() if _differs(prior.get(name), planned.get(name))]
        planned["revision"] = Unknown if changed else prior["revision"]
        replace = ["key"] if "key" in changed else []
        return Planned(planned, requires_replace=replace, private=request.prior_private)

    # ---------------------------------------------------------------- apply

    def apply_change(self, diags: Diagnostics, request: ApplyRequest) -> Outcome:
        files = self.provider.files()
        prior, planned = request.prior, request.planned
        if planned is None:
            self._check_private(prior["key"], request.planned_private)
            files.delete(prior["key"])
            return Outcome(None)
        unknown = [name for name in self._settable() if planned.get(name) is Unknown]
        if unknown:
            raise Failure(
                f"{self.type_name}: the planned value of {', '.join(unknown)} is unknown at apply",
                attribute=unknown[0],
            )
        key = planned["key"]
        if prior is None:
            content = self._file_content(planned, revision=1)
            if not files.create(key, content):
                raise Failure(f"{self.type_name} {key} already exists; import it", attribute="key")
            return self._outcome(content)
        if key != prior["key"]:
            raise Failure(f"{self.type_name} {prior['key']}: key cannot change in place", attribute="key")
        self._check_private(key, request.planned_private)
        if files.read(key) is None:
            raise Failure(
                f"{self.type_name} {key} does not exist any more",
                "It was deleted outside of Terraform; refresh to forget it.",
            )
        changed = any(_differs(prior.get(name), planned.get(name)) for name in self._settable())
        revision = _whole(prior.get("revision") or 0) + (1 if changed else 0)
        content = self._file_content(planned, revision=revision)
        files.write(key, content)
        return self._outcome(content)

    # ------------------------------------------------------- read and import

    def read_object(self, diags: Diagnostics, current: dict, private: bytes) -> Outcome:
        key = current.get("key") or current.get("id")
        content = self.provider.files().read(key)
        if content is None:
            return Outcome(None)
        if not RELEASE.private_data:
            return Outcome(self._state(content), private)
        if current.get("revision") is None:
            # An import stub: the object was never given private data.
            return Outcome(self._state(content), _etag(_file_revision(content)))
        self._check_private(key, private, content)
        return Outcome(self._state(content), private)

    def import_object(self, diags: Diagnostics, id: str) -> Outcome:
        problem = name_problem(id)
        if problem:
            raise Failure(f"cannot import {self.type_name} {id!r}: {problem}")
        if self.provider.files().read(id) is None:
            raise Failure(
                f"cannot import {self.type_name} {id}: it does not exist",
                f"No object file {id}.json in {self.provider.files().directory}.",
            )
        return Outcome({"id": id, "key": id})

    # -------------------------------------------------------------- upgrade

    def upgrade_state(self, diags: Diagnostics, version: int, raw: dict) -> dict:
        if version > RELEASE.schema_version:
            raise Failure(
                f"{self.type_name} state has schema version {version}, newer than"
                f" store provider {RELEASE.version}'s {RELEASE.schema_version}",
                "The state was written by a newer release of the provider; use that release or a newer one.",
            )
        state = dict(raw)
        if version < 2 and RELEASE.schema_version >= 2 and "content" in state:
            state["value"] = state.pop("content")
        strange = sorted(set(state) - set(self.attribute_names()))
        if strange:
            raise Failure(
                f"{self.type_name} state (schema version {version}) has attributes"
                f" this release does not know: {', '.join(strange)}"
            )
        for name in ("size", "revision"):
            state[name] = _whole(state.get(name))
        return state

    # ---------------------------------------------------------------- parts

    def _file_content(self, planned: dict, revision: int) -> dict:
        content = {
            "key": planned["key"],
            RELEASE.text: planned[RELEASE.text],
            "tags": planned.get("tags"),
            "description": planned.get("description"),
            "revision": revision,
            "token_hash": self.provider.token_hash(),
        }
        if RELEASE.secret_value:
            content["secret_value"] = planned.get("secret_value")
        return content

    def _state(self, content: dict) -> dict:
        text = _file_text(content)
        state = {
            "id": content["key"],
            "key": content["key"],
            RELEASE.text: text,
            "tags": content.get("tags"),
            "description": content.get("description"),
            "size": len(text) if isinstance(text, str) else None,
            "revision": _file_revision(content),
        }
        if RELEASE.secret_value:
            state["secret_value"] = content.get("secret_value")
        return state

    def _outcome(self, content: dict) -> Outcome:
        private = _etag(content["revision"]) if RELEASE.private_data else b""
        return Outcome(self._state(content), private)

    def _check_private(self, key: str, received: bytes, content: Optional[dict] = None) -> None:
        """Fails unless `received` is the private data the object was last
        given. An object last written by 1.0.0 (or missing) was given none
        to check against."""
        if not RELEASE.private_data:
            return
        if content is None:
            files = self.provider.files_if_known()
            content = files.read(key) if files else None
        if content is None or "value" not in content:
            return
        expected = _etag(_file_revision(content))
        if received != expected:
            raise Failure(
                f"{self.type_name} {key}: private data lost (expected etag r{_file_revision(content)},"
                f" got {_describe_private(received)})"
            )


class ItemData(DataSource):
    """Data source `store_item`: one object's text, tags and description."""

    def __init__(self, provider: "StoreProvider"):
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        return "item"

    @classmethod
    def get_schema(cls) -> Schema:
        return Schema(
            attributes=[
                Attribute("key", String(), required=True),
                Attribute("value", String(), computed=True),
                Attribute("tags", Map(String()), computed=True),
                Attribute("description", String(), computed=True),
            ]
        )

    def read(self, ctx: ReadDataContext, config: Config) -> Optional[dict]:
        key = config.get("key")
        if key is Unknown:
            return {"key": Unknown, "value": Unknown, "tags": Unknown, "description": Unknown}
        try:
            content = self.provider.files().read(key)
        except (Failure, ValueError) as exc:
            ctx.diagnostics.add_error(f"data source store_item {key}: {exc}", path=["key"])
            return None
        if content is None:
            ctx.diagnostics.add_error(f"data source store_item: {key} does not exist", path=["key"])
            return None
        return {
            "key": key,
            "value": _file_text(content),
            "tags": content.get("tags"),
            "description": content.get("description"),
        }


class StoreProvider(Provider):
    def __init__(self):
        self.directory: Any = None
        self.token: Any = None
        self.configured = False

    def get_model_prefix(self) -> str:
        return "store_"

    def full_name(self) -> str:
        return "registry.opentofu.org/converge-test/store"

    def get_provider_schema(self, diags: Diagnostics) -> Schema:
        return Schema(
            attributes=[
                Attribute("directory", String(), optional=True),
                Attribute("token", String(), optional=True, sensitive=True),
            ]
        )

    def validate_config(self, diags: Diagnostics, config: Config):
        pass

    def configure_provider(self, diags: Diagnostics, config: Config):
        config = config or {}
        self.directory = resolve_directory(diags, config, DIRECTORY_ENV)
        self.token = config.get("token")
        self.configured = self.directory is not None

    def files_if_known(self) -> Optional[ObjectFiles]:
        if not self.configured or self.directory is Unknown:
            return None
        return ObjectFiles(self.directory)

    def files(self) -> ObjectFiles:
        if not self.configured:
            raise Failure("the store provider is not configured (ConfigureProvider was not called or failed)")
        if self.directory is Unknown:
            raise Failure("the store provider's directory is unknown", attribute="directory")
        return ObjectFiles(self.directory)

    def token_hash(self) -> Optional[str]:
        if self.token is None:
            return None
        if self.token is Unknown:
            raise Failure("the store provider's token is unknown")
        return hashlib.sha256(self.token.encode("utf-8")).hexdigest()

    def get_data_sources(self) -> list[Type[DataSource]]:
        return [ItemData]

    def get_resources(self) -> list[Type[Resource]]:
        return [Item]


if __name__ == "__main__":
    serve(StoreProvider())
