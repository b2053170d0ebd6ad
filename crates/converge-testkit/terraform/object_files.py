"""The "remote system" of Converge's test providers: objects as JSON files in
one directory, `<directory>/<name>.json`.

A test can look at the files to see which real objects exist, edit one to
make drift, or write one to make an object that exists before it is
imported. Writes are atomic (a temporary file renamed, or linked into place
when the object must not exist yet), so a reader never sees half a file.
"""

import json
import os
import tempfile
from typing import Any, Optional

from tf.types import Unknown
from tf.utils import Diagnostics


def resolve_directory(diags: Diagnostics, config: dict, env_var: str) -> Any:
    """The provider's `directory`: the configured one, else `$env_var`.
    Unknown while the configuration is unknown; None (with an error
    diagnostic naming the attribute) when neither is set."""
    directory = config.get("directory")
    if directory is Unknown:
        return Unknown
    if directory is None:
        directory = os.environ.get(env_var) or None
    if directory is None:
        diags.add_error(
            "directory is not set",
            f"Set the provider's `directory` attribute or the {env_var} environment variable"
            " to the directory that holds the objects.",
            path=["directory"],
        )
        return None
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        diags.add_error(f"directory {directory!r} cannot be created: {exc}", path=["directory"])
        return None
    return directory


def name_problem(name: str) -> Optional[str]:
    """Why `name` cannot name an object file, or None."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        return f"{name!r} cannot be used as a file name"
    return None


class ObjectFiles:
    """The objects in one directory."""

    def __init__(self, directory: str):
        self.directory = directory

    def path(self, name: str) -> str:
        problem = name_problem(name)
        if problem:
            raise ValueError(problem)
        return os.path.join(self.directory, f"{name}.json")

    def read(self, name: str) -> Optional[dict]:
        """The object's content, or None if it does not exist."""
        try:
            with open(self.path(name), encoding="utf-8") as f:
                content = json.load(f)
        except FileNotFoundError:
            return None
        if not isinstance(content, dict):
            raise ValueError(f"{self.path(name)} does not hold a JSON object")
        return content

    def create(self, name: str, content: dict) -> bool:
        """Writes a new object; False (and nothing written) if it exists."""
        temp = self._temp_file(content)
        try:
            os.link(temp, self.path(name))
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(temp)

    def write(self, name: str, content: dict) -> None:
        """Writes the object, replacing what was there."""
        temp = self._temp_file(content)
        try:
            os.replace(temp, self.path(name))
        except BaseException:
            os.unlink(temp)
            raise

    def delete(self, name: str) -> bool:
        """Removes the object; False if it did not exist."""
        try:
            os.unlink(self.path(name))
            return True
        except FileNotFoundError:
            return False

    def _temp_file(self, content: dict) -> str:
        fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, sort_keys=True)
            f.write("\n")
        return temp
