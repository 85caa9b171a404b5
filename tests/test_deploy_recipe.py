"""The deployment recipe (deploy/), checked without a container engine or a cluster: the compose
file against the Compose Specification's schema, the Kubernetes manifests against the
Kubernetes API's schemas (kubernetes-validate) and KEDA's CRDs, kustomize's resources, and every
variable they set against the settings table. The schemas are vendored in tests/deploy_schemas
(README.md there names their sources and licences).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from service.core.config import Config, ConfigError
from service.core.settings import BY_ENV
from tests.deploy_files import (
    DEPLOY,
    ENVIRONMENT,
    K8S,
    REQUIRED,
    ROOT,
    SCHEMAS,
    SECRET_SETTINGS,
    Unset,
    compose,
    documented_others,
    kustomization,
    manifests,
    of_kind,
    pod_templates,
    secret_keys_made,
    variables_set,
)

KUBERNETES_VERSION = "1.30"  # the oldest release the manifests are meant for


# -------------------------------------------------------------------------------------------------
# compose


def test_compose_file_follows_the_compose_specification() -> None:
    schema = json.loads((SCHEMAS / "compose-spec.json").read_text())
    jsonschema.Draft7Validator(schema).validate(compose())


def test_compose_file_refuses_to_start_without_each_secret() -> None:
    for name in REQUIRED:
        with pytest.raises(Unset, match=name):
            compose({k: v for k, v in ENVIRONMENT.items() if k != name})
    raw = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, service in raw["services"].items():
        for variable, value in service.get("environment", {}).items():
            if variable in SECRET_SETTINGS | {"POSTGRES_PASSWORD", "REDISCLI_AUTH"}:
                assert "${" in value, (name, variable)  # from the environment, never written


def test_compose_migrates_once_before_any_instance_starts() -> None:
    services = compose()["services"]
    assert services["migrate"]["command"] == ["scrapespy", "db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthcheck" in services["postgres"]
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        # the shell gives the instance its own address for the browsers to reach its guard
        shell, flag, line = services[name]["command"]
        assert (shell, flag) == ("sh", "-c")
        assert line == "SCRAPESPY_BROWSER_EGRESS_HOST=$(hostname -i) exec scrapespy serve " + (
            "--host 0.0.0.0 --port 8080"
        )
    assert int(services["api"]["deploy"]["replicas"]) >= 2
    assert int(services["worker"]["deploy"]["replicas"]) >= 1


def test_compose_instances_share_the_browser_servers() -> None:
    services = compose()["services"]
    servers = [name for name in services if name.startswith("browser-")]
    assert len(servers) >= 2
    for name in ("api", "worker"):
        env = services[name]["environment"]
        endpoints = env["SCRAPESPY_BROWSER_ENDPOINTS"].split(",")
        assert endpoints == [f"ws://{server}:3000/" for server in servers]
        assert (
            env["SCRAPESPY_BROWSER_ENDPOINT_TOKEN"]
            == ENVIRONMENT["SCRAPESPY_BROWSER_ENDPOINT_TOKEN"]
        )
        assert set(servers) <= set(services[name]["depends_on"])
    for server in servers:
        command = services[server]["command"]
        assert command[:2] == ["scrapespy", "browser"]
        assert command[command.index("--token-env") + 1] == "SCRAPESPY_BROWSER_ENDPOINT_TOKEN"
        assert (
            services[server]["environment"]["SCRAPESPY_BROWSER_ENDPOINT_TOKEN"]
            == (ENVIRONMENT["SCRAPESPY_BROWSER_ENDPOINT_TOKEN"])
        )


def test_compose_keeps_data_in_postgresql_only() -> None:
    spec = compose()
    assert set(spec["volumes"]) == {"postgres-data"}
    for name, service in spec["services"].items():
        volumes = service.get("volumes", [])
        if name == "postgres":
            assert volumes == ["postgres-data:/var/lib/postgresql/data"]
        else:  # a configuration file, read-only, at most
            assert all(v.startswith("./") and v.endswith(":ro") for v in volumes), name
    # the image's VOLUME for SQLite would get an anonymous volume: a tmpfs takes its place
    for name in ("api", "worker", "migrate"):
        assert spec["services"][name]["tmpfs"] == ["/data"]


def test_compose_load_balancer_checks_each_instance_on_healthz() -> None:
    lb = compose()["services"]["lb"]
    assert lb["volumes"] == ["./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro"]
    config = (DEPLOY / "haproxy.cfg").read_text()
    assert "http-check send meth GET uri /healthz" in config
    assert re.search(r"^\s*server-template api \d+ api:8080$", config, re.M)
    assert re.search(r"^\s*default-server check .*resolvers docker", config, re.M)


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")
def test_haproxy_accepts_its_configuration() -> None:
    done = subprocess.run(
        ["haproxy", "-c", "-f", str(DEPLOY / "haproxy.cfg")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -------------------------------------------------------------------------------------------------
# Kubernetes


def test_kustomization_resources_exist_and_name_what_the_pods_use() -> None:
    kust = kustomization()
    for resource in kust["resources"]:
        assert (K8S / resource).is_file(), resource
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert on_disk == set(kust["resources"])
    images = {image["name"] for image in kust["images"]}
    maps = {generated["name"] for generated in kust["configMapGenerator"]}
    for name, pod in pod_templates():
        for container in pod["containers"]:
            assert container["image"] in images, name
            for source in container.get("envFrom", []):
                assert source["configMapRef"]["name"] in maps, name
    assert not of_kind("Secret")


def test_kubernetes_manifests_follow_the_api_schemas() -> None:
    crds = {}
    for path in SCHEMAS.glob("keda.sh_*.yaml"):
        crd = yaml.safe_load(path.read_text())
        version = crd["spec"]["versions"][0]
        crds[(f"keda.sh/{version['name']}", crd["spec"]["names"]["kind"])] = version["schema"][
            "openAPIV3Schema"
        ]
    kinds = []
    for doc in manifests():
        kinds.append(doc["kind"])
        key = (doc["apiVersion"], doc["kind"])
        if key in crds:
            jsonschema.Draft7Validator(crds[key]).validate(doc)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    assert sorted(kinds) == sorted(
        ["Job", "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"]
        + ["Deployment", "PodDisruptionBudget", "ScaledObject", "TriggerAuthentication"]
        + ["StatefulSet", "Service", "PodDisruptionBudget"]
    )


def test_a_broken_manifest_is_refused() -> None:
    """The check above can fail: a probe on a port by a name no container declares is legal
    YAML and a legal object, so the schema is tried on a field of the wrong type instead."""
    deployment = of_kind("Deployment")[0]
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_every_pod_is_probed_on_healthz_and_covered_by_a_budget() -> None:
    budgets = [pdb["spec"]["selector"]["matchLabels"] for pdb in of_kind("PodDisruptionBudget")]
    for deployment in of_kind("Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert any(budget.items() <= labels.items() for budget in budgets), deployment
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                assert container[probe]["httpGet"]["path"] == "/healthz"
            ports = {port["name"] for port in container["ports"]}
            assert container["readinessProbe"]["httpGet"]["port"] in ports


def test_every_api_and_worker_pod_shares_the_browser_servers() -> None:
    (browsers,) = of_kind("StatefulSet")
    (headless,) = [s for s in of_kind("Service") if s["metadata"]["name"] == "scrapespy-browser"]
    assert headless["spec"]["clusterIP"] == "None"
    assert browsers["spec"]["serviceName"] == headless["metadata"]["name"]
    name = browsers["metadata"]["name"]
    (literal,) = [
        literal
        for g in kustomization()["configMapGenerator"]
        for literal in g["literals"]
        if literal.startswith("SCRAPESPY_BROWSER_ENDPOINTS=")
    ]
    endpoints = literal.split("=", 1)[1].split(",")
    assert endpoints == [
        f"ws://{name}-{n}.{headless['metadata']['name']}:3000/"
        for n in range(browsers["spec"]["replicas"])
    ]
    (server,) = browsers["spec"]["template"]["spec"]["containers"]
    assert server["command"][:2] == ["scrapespy", "browser"]
    token_env = server["command"][server["command"].index("--token-env") + 1]
    server_env = {v["name"]: v for v in server["env"]}
    assert server_env[token_env]["valueFrom"]["secretKeyRef"]["key"] == "browser-token"
    instances = [
        container
        for _, pod in pod_templates()
        for container in pod["containers"]
        if container["command"][:2] == ["scrapespy", "serve"]
    ]
    assert len(instances) == 2  # the API's and the workers'
    for container in instances:
        env = {v["name"]: v for v in container["env"]}
        token = env["SCRAPESPY_BROWSER_ENDPOINT_TOKEN"]
        assert token["valueFrom"]["secretKeyRef"]["key"] == "browser-token"
        assert env["SCRAPESPY_BROWSER_EGRESS_HOST"]["valueFrom"] == {
            "fieldRef": {"fieldPath": "status.podIP"}
        }
    assert any(
        pdb["spec"]["selector"]["matchLabels"].items()
        <= browsers["spec"]["template"]["metadata"]["labels"].items()
        for pdb in of_kind("PodDisruptionBudget")
    )


def test_api_grows_on_cpu_and_workers_on_the_queue() -> None:
    (hpa,) = of_kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "scrapespy-api"
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    (scaled,) = of_kind("ScaledObject")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "scrapespy-worker"
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "postgresql"
    assert "procrastinate_jobs" in trigger["metadata"]["query"]
    (auth,) = of_kind("TriggerAuthentication")
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    names = {d["metadata"]["name"] for d in of_kind("Deployment")}
    assert names == {"scrapespy-api", "scrapespy-worker"}


def test_no_secret_is_written_in_a_manifest() -> None:
    made = secret_keys_made()
    for name, pod in pod_templates():
        for container in pod["containers"]:
            for variable in container.get("env", []):
                if variable["name"] in SECRET_SETTINGS:
                    assert "value" not in variable, (name, variable["name"])
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref is not None:
                    assert ref["name"] == "scrapespy" and ref["key"] in made, variable
    for generated in kustomization()["configMapGenerator"]:
        for literal in generated["literals"]:
            assert literal.split("=", 1)[0] not in SECRET_SETTINGS, literal
    for ref in of_kind("TriggerAuthentication")[0]["spec"]["secretTargetRef"]:
        assert ref["name"] == "scrapespy" and ref["key"] in made


# -------------------------------------------------------------------------------------------------
# variables


def test_every_variable_the_recipe_sets_is_a_setting_or_documented() -> None:
    others = documented_others()
    assert others, "docs/operations.md lists no variable of the other images"
    unknown = {
        name: where
        for name, where in variables_set().items()
        if name not in BY_ENV and name not in others
    }
    assert not unknown
    # and the documented ones are not the service's, nor unused
    assert not others & set(BY_ENV)
    assert others <= set(variables_set())


def test_every_value_the_recipe_gives_a_setting_is_one_the_service_accepts() -> None:
    """Each instance's environment, as each form gives it, read as the service reads it (the
    secrets replaced by values of their form: the payments' left out, since one without the
    other is refused at start on purpose)."""

    shared = dict(
        literal.split("=", 1)
        for g in kustomization()["configMapGenerator"]
        for literal in g["literals"]
    )
    environments = {
        f"compose {name}": dict(compose()["services"][name]["environment"])
        for name in ("api", "worker")
    }
    for name, pod in pod_templates():
        for container in pod["containers"]:
            given = {v["name"]: v["value"] for v in container.get("env", []) if "value" in v}
            environments[f"k8s {name}"] = {**shared, **given}
    for where, values in environments.items():
        values = {k: v for k, v in values.items() if k in BY_ENV and not k.startswith("STRIPE_")}
        values["SCRAPESPY_DATABASE_URL"] = "postgresql+psycopg2://scrapespy:x@postgres/scrapespy"
        values["SCRAPESPY_PUBLIC_URL"] = "https://scrape.example.com"
        try:
            Config.from_env(values)
        except ConfigError as exc:
            pytest.fail(f"{where}: {exc}")


# -------------------------------------------------------------------------------------------------
# sizes


def test_requests_follow_the_measured_figures() -> None:
    """An instance's memory request covers its measured peak under load (bench/results/
    sizing.json, `python -m bench.sizing`), and its CPU request is one from which the HPA's
    target is reached before the instance is saturated (a saturated instance's cores:
    `make bench`'s one-process run, bench/results/latest.json)."""
    sizing = json.loads((ROOT / "bench" / "results" / "sizing.json").read_text())
    peak_mb = max(sizing["static"]["peak_tree_pss_mb"], sizing["js"]["peak_tree_pss_mb"])
    one = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())["workers"]["1"]
    saturated = one["rps"] * one["cpu_s_per_1000"] / 1000
    (hpa,) = of_kind("HorizontalPodAutoscaler")
    target = hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] / 100
    for deployment in of_kind("Deployment"):
        resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
        assert mebibytes(resources["requests"]["memory"]) >= peak_mb
        assert mebibytes(resources["limits"]["memory"]) >= 2 * peak_mb
        assert cores(resources["requests"]["cpu"]) * target < saturated


def mebibytes(quantity: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) * (1024 if unit == "Gi" else 1)


def cores(quantity: str) -> float:
    return int(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


# -------------------------------------------------------------------------------------------------
# the queue's depth, as KEDA reads it


@pytest.mark.postgres
def test_the_queue_depth_counts_the_pages_workers_could_take_now(tmp_path: Path) -> None:
    """The ScaledObject's query on the schema the migrations make: a batch's tasks count their
    pages, a crawl one page per lock with work, and neither a retry still waiting for its
    backoff nor the webhooks' queue counts."""
    from sqlalchemy import create_engine, text

    from service.db import Database
    from tests.conftest import _postgres_database

    made = _postgres_database()
    url = next(made)
    try:
        database = Database(url, threads=1)
        database.upgrade()
        database.stop()
        (scaled,) = of_kind("ScaledObject")
        query = text(scaled["spec"]["triggers"][0]["metadata"]["query"])
        engine = create_engine(url)
        insert = text(
            "INSERT INTO procrastinate_jobs (queue_name, task_name, lock, args, status,"
            " scheduled_at) VALUES (:queue, 'scrapespy.job_page', :lock, CAST(:args AS jsonb),"
            " CAST(:status AS procrastinate_job_status), NOW() + make_interval(secs => :later))"
        )

        def task(pages: int, lock: str | None = None, **kw: Any) -> dict[str, Any]:
            args = {"page_ids": list(range(pages)), "job_seq": 1}
            row = {"queue": "default", "lock": lock, "status": "todo", "later": -1}
            return {**row, "args": json.dumps(args), **kw}

        with engine.begin() as conn:
            assert conn.execute(query).scalar() == 0
            conn.execute(
                insert,
                [
                    task(16),
                    task(16, status="doing"),
                    task(5),
                    task(4, lock="crawl:7:0"),
                    task(4, lock="crawl:7:0"),
                    task(1, lock="crawl:7:1", status="doing"),
                    task(16, later=60),  # a retry's backoff
                    task(16, status="failed"),
                    task(1, queue="webhooks"),
                ],
            )
            assert conn.execute(query).scalar() == 16 + 16 + 5 + 2
        engine.dispose()
    finally:
        next(made, None)
