"""Validate JSON against the OpenAPI subset (``openapi-subset.json``, OpenAPI 3.0.3).

OpenAPI 3.0 schemas are *almost* JSON Schema: ``nullable: true`` is rewritten to a ``null`` type (or an
``anyOf`` with ``null`` where there is no ``type``) and ``$ref``s to ``#/components/...`` resolve inside the
subset document. ``date-time`` and ``uri`` formats are checked.
"""

from __future__ import annotations

import json
import re
import threading
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SUBSET_PATH = Path(__file__).with_name("openapi-subset.json")
BASE_URI = "urn:ghstub:openapi-subset"
NAME_MAPS = frozenset({"properties", "patternProperties"})
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")

FORMATS = FormatChecker(formats=())


@FORMATS.checks("date-time")
def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or bool(DATE_TIME.match(value))


@FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlsplit(value).scheme)


def to_json_schema(node: Any) -> Any:
    """Rewrite OpenAPI 3.0 ``nullable`` into JSON Schema, recursively."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in NAME_MAPS and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key != "nullable" or value is not True:
            out[key] = to_json_schema(value)
    if node.get("nullable") is not True:
        return out
    if "type" in out and "$ref" not in out:
        out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else [*out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [out, {"type": "null"}]}


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class OpenAPISubset:
    """The subset document, with validators per operation response and request body."""

    def __init__(self, path: Path = SUBSET_PATH) -> None:
        self.raw: dict[str, Any] = json.loads(path.read_text())
        self.document: dict[str, Any] = to_json_schema(self.raw)
        resource = Resource.from_contents(self.document, default_specification=DRAFT202012)
        self._registry: Registry[Any] = Registry().with_resource(BASE_URI, resource)
        self._validators: dict[str, Draft202012Validator] = {}
        self._lock = threading.Lock()

    def operations(self) -> set[tuple[str, str]]:
        return {
            (method.upper(), template)
            for template, item in self.raw["paths"].items()
            for method in item
            if method != "parameters"
        }

    def webhook_schema_names(self) -> dict[str, str]:
        """Webhook key (``push``, ``pull-request-opened``, ...) → component schema name."""
        out = {}
        for name, hook in self.raw["x-webhooks"].items():
            ref = hook["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            out[name] = ref.rsplit("/", 1)[1]
        return out

    def response_pointer(self, method: str, template: str, status: int) -> str | None:
        """JSON pointer to the schema of the JSON response, or None when the operation declares no body."""
        operation = self.raw["paths"][template][method.lower()]
        base = f"/paths/{_escape(template)}/{method.lower()}/responses"
        responses = operation["responses"]
        key = str(status) if str(status) in responses else "default" if "default" in responses else None
        if key is None:
            return None
        response, pointer = responses[key], f"{base}/{key}"
        if "$ref" in response:
            pointer = response["$ref"].removeprefix("#")
            kind, name = pointer.split("/")[2:4]
            response = self.raw["components"][kind][name]
        if "application/json" not in response.get("content", {}):
            return None
        return f"{pointer}/content/application~1json/schema"

    def request_pointer(self, method: str, template: str) -> str | None:
        operation = self.raw["paths"][template][method.lower()]
        if "application/json" not in operation.get("requestBody", {}).get("content", {}):
            return None
        return f"/paths/{_escape(template)}/{method.lower()}/requestBody/content/application~1json/schema"

    def component_pointer(self, name: str) -> str:
        return f"/components/schemas/{_escape(name)}"

    def validator(self, pointer: str) -> Draft202012Validator:
        with self._lock:
            if pointer not in self._validators:
                self._validators[pointer] = Draft202012Validator(
                    {"$ref": f"{BASE_URI}#{pointer}"}, registry=self._registry, format_checker=FORMATS
                )
            return self._validators[pointer]

    def errors(self, pointer: str, instance: Any) -> list[str]:
        """Readable validation errors (empty when valid)."""
        found = sorted(self.validator(pointer).iter_errors(instance), key=lambda e: list(e.absolute_path))
        return [f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message[:300]}" for error in found]

    def response_errors(self, method: str, template: str, status: int, body: Any) -> list[str]:
        """Errors of ``body`` against the declared response; undeclared error bodies must be a basic-error."""
        pointer = self.response_pointer(method, template, status)
        if pointer is None and status >= 400 and body is not None:
            pointer = self.component_pointer("basic-error")
        if pointer is None:
            return [] if body is None else [f"{method} {template} declares no JSON body for {status}"]
        return self.errors(pointer, body)


@cache
def subset() -> OpenAPISubset:
    """The shared, lazily loaded subset."""
    return OpenAPISubset()
