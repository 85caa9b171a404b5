"""The deployment recipe's files (deploy/) as the tests read them: the compose file with
Compose's interpolation, kustomize's resources, the pods' templates, and what
docs/operations.md documents about them. tests/test_deploy_recipe.py checks them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
SCHEMAS = Path(__file__).resolve().parent / "deploy_schemas"
OPERATIONS = ROOT / "docs" / "operations.md"

# the secrets the compose file must be given: a missing one stops `docker compose`
REQUIRED = (
    "POSTGRES_PASSWORD",
    "REDIS_PASSWORD",
    "SCRAPESPY_SESSION_SECRET",
    "SCRAPESPY_BROWSER_ENDPOINT_TOKEN",
    "SCRAPESPY_PUBLIC_URL",
)
ENVIRONMENT = {name: f"value-of-{name.lower()}" for name in REQUIRED}
# the settings whose value is a secret: in a manifest, only ever from a Secret
SECRET_SETTINGS = {
    "SCRAPESPY_DATABASE_URL",
    "SCRAPESPY_REDIS_URL",
    "SCRAPESPY_SESSION_SECRET",
    "SCRAPESPY_METRICS_TOKEN",
    "SCRAPESPY_BROWSER_ENDPOINT_TOKEN",
    "STRIPE_SECRET_KEY",
    "STRIPE_WEBHOOK_SECRET",
}

_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


class Unset(Exception):
    pass


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's interpolation of ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}``;
    ``$$`` is a ``$`` left to the container's shell."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        name, op, arg = match["name"], match["op"], match["arg"]
        if env.get(name):
            return env[name]
        if op == ":?":
            raise Unset(f"{name}: {arg}")
        return arg if op == ":-" else ""

    return _VARIABLE.sub(one, value)


def compose(env: dict[str, str] = ENVIRONMENT) -> dict[str, Any]:
    """deploy/compose.yaml as `docker compose config` reads it: YAML merges, then variables."""
    return interpolate(yaml.safe_load((DEPLOY / "compose.yaml").read_text()), env)


def kustomization() -> dict[str, Any]:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())


def manifests() -> Iterator[dict[str, Any]]:
    """Every object of kustomization.yaml's resources, as `kustomize build` reads them."""
    for resource in kustomization()["resources"]:
        for doc in yaml.safe_load_all((K8S / resource).read_text()):
            if doc is not None:
                yield doc


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in manifests() if doc["kind"] == kind]


def pod_templates() -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in manifests():
        if doc["kind"] in ("Deployment", "Job"):
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]


def documented_others() -> set[str]:
    """The variables the recipe sets that are not the service's: docs/operations.md lists them
    under "Running on several machines"."""
    text = OPERATIONS.read_text()
    section = text.split("## Running on several machines", 1)[1].split("\n## ", 1)[0]
    table = section.split("| variable | read by | meaning |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", table, re.M))


def secret_keys_made() -> set[str]:
    """The keys of the Secret that kustomization.yaml tells the operator to create."""
    text = (K8S / "kustomization.yaml").read_text()
    return set(re.findall(r"--from-literal=([a-z-]+)=", text))


def variables_set() -> dict[str, set[str]]:
    """Each variable the recipe sets in a container, with where."""
    found: dict[str, set[str]] = {}
    for name, service in compose()["services"].items():
        for variable in service.get("environment", {}):
            found.setdefault(variable, set()).add(f"compose {name}")
    for name, pod in pod_templates():
        for container in pod["containers"]:
            for variable in container.get("env", []):
                found.setdefault(variable["name"], set()).add(f"k8s {name}")
    for generated in kustomization()["configMapGenerator"]:
        for literal in generated["literals"]:
            found.setdefault(literal.split("=", 1)[0], set()).add("k8s ConfigMap")
    return found
