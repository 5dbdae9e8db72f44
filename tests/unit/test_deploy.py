"""The Docker files agree with each other and with the project, read without Docker: the image
installs the torch scripts/setup pins, from the CPU index, before the packages; the replicas'
command and environment, read by contextwm's own flag parser and settings loader, serve the
compose file's database on 0.0.0.0, as insecure (only Envoy reaches them), where the image
alone refuses to; Envoy sends HTTP/2 to the replicas' service and port and checks the
readiness name the server reports; and the image's health probe answers as the server's
health does (against a real server on loopback)."""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from contextwm.app import Service, listening_tls
from contextwm.serve import add_serve_arguments, flag_settings
from contextwm.settings import ServerSettings, SettingsError, load_settings
from contextwm.transport.readiness import SERVICE_NAME

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
ENVOY = ROOT / "deploy" / "envoy.yaml"
PROBE = ROOT / "deploy" / "healthcheck.py"
SETUP = ROOT / "scripts" / "setup"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
REPLICAS = "contextwm"  # the compose service Envoy resolves


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    joined: list[str] = []
    current = ""
    for line in DOCKERFILE.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    out = []
    for text in joined:
        word, _, rest = text.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def arguments(name: str) -> list[str]:
    return [rest for word, rest in instructions() if word == name]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for rest in arguments("ENV"):
        for pair in shlex.split(rest):
            key, sep, value = pair.partition("=")
            assert sep, f"ENV {rest}: write ENV KEY=value"
            env[key] = value
    return env


def exec_form(name: str) -> list[str]:
    (rest,) = arguments(name)
    value = yaml.safe_load(rest)  # a JSON array is YAML too
    assert isinstance(value, list), f"{name} {rest}: use the exec (JSON array) form"
    return [str(v) for v in value]


def interpolated(value: Any) -> Any:
    """A compose value with ${VAR:-default} and ${VAR-default} replaced by their defaults, as
    compose would on a machine that sets none of them."""

    def default(match: re.Match[str]) -> str:
        assert match.group(2) is not None, f"{match.group(0)} has no default"
        return match.group(2)

    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)(?::?-([^}]*))?\}", default, value)
    if isinstance(value, list):
        return [interpolated(v) for v in value]
    if isinstance(value, dict):
        return {k: interpolated(v) for k, v in value.items()}
    return value


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = interpolated(yaml.safe_load(COMPOSE.read_text()))
    return loaded


def envoy() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ENVOY.read_text())
    return loaded


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):  # the KEY=value list form
        env = dict(item.partition("=")[::2] for item in env)
    return {str(k): str(v) for k, v in env.items()}


def replica_settings() -> tuple[ServerSettings, list[str]]:
    """What `contextwm serve` in a replica container runs with: the image's environment, then
    the compose service's, then the flags of its command, through contextwm's own loader."""
    service = compose()["services"][REPLICAS]
    command = service.get("command") or exec_form("CMD")
    assert exec_form("ENTRYPOINT") == ["contextwm"]
    assert isinstance(command, list) and command[0] == "serve", command
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    flags = parser.parse_args(command[1:])
    env = {**image_env(), **environment(service)}
    return load_settings(flags.config, env, flag_settings(flags)), command


def test_the_image_installs_the_torch_scripts_setup_pins_from_the_cpu_index_first() -> None:
    pinned = re.findall(r"torch==([0-9][\w.+]*)", SETUP.read_text())
    assert len(pinned) == 1, "scripts/setup should pin torch once"
    args = dict(a.partition("=")[::2] for a in arguments("ARG"))
    assert args.get("TORCH_VERSION") == pinned[0]
    runs = arguments("RUN")
    torch_runs = [i for i, run in enumerate(runs) if re.search(r"pip install [^&]*torch==", run)]
    package_runs = [i for i, run in enumerate(runs) if re.search(r"install .*\./client \.", run)]
    assert len(torch_runs) == 1 and len(package_runs) == 1, runs
    torch_run = runs[torch_runs[0]]
    assert f"--index-url {CPU_INDEX} " in torch_run
    assert '"torch==${TORCH_VERSION}"' in torch_run
    # Before the packages, which then keep that build (the constraint says so).
    assert torch_runs[0] < package_runs[0]
    assert 'echo "torch==${TORCH_VERSION}"' in runs[package_runs[0]]
    assert "--constraint" in runs[package_runs[0]]


def test_the_image_runs_offline_as_a_user_and_probes_readiness() -> None:
    assert image_env()["HF_HUB_OFFLINE"] == "1"
    users = arguments("USER")
    assert users and users[-1] not in ("root", "0")
    (healthcheck,) = arguments("HEALTHCHECK")
    assert healthcheck.endswith('CMD ["contextwm-healthcheck"]')
    assert any(
        a.endswith("deploy/healthcheck.py /usr/local/bin/contextwm-healthcheck")
        for a in arguments("COPY")
    )


def test_the_replicas_serve_the_compose_database_on_every_interface() -> None:
    settings, command = replica_settings()
    services = compose()["services"]
    db = services["db"]
    url = urllib.parse.urlsplit(settings.store)
    assert "--store" in command
    assert url.scheme == "postgresql"
    assert url.hostname == "db" and url.port == 5432
    db_env = environment(db)
    assert url.path == "/" + db_env["POSTGRES_DB"]
    assert url.username == db_env["POSTGRES_USER"]
    # The password: in the URL, or given to libpq as PGPASSWORD; either way the database's.
    password = url.password or environment(services[REPLICAS]).get("PGPASSWORD")
    assert password == db_env["POSTGRES_PASSWORD"]
    assert settings.host == "0.0.0.0"
    # Plaintext without keys, behind Envoy in the compose network: said in so many words, or
    # the secure-by-default rule would stop every replica.
    assert settings.insecure and not settings.require_api_keys
    assert listening_tls(settings) is None
    # The probe reads the port from the environment: a --port flag would leave it behind.
    assert "--port" not in command and "--host" not in command
    # Each replica its own data directory: a volume of the image, never a shared mount.
    assert str(settings.data_dir) in {yaml.safe_load(v)[0] for v in arguments("VOLUME")}
    mounts = [str(m).split(":") for m in services[REPLICAS].get("volumes", [])]
    assert not any(len(m) > 1 and m[1] == str(settings.data_dir) for m in mounts)
    assert services[REPLICAS]["depends_on"]["db"]["condition"] == "service_healthy"
    assert db["image"].startswith("pgvector/pgvector:pg")
    assert "pg_isready" in db["healthcheck"]["test"]


def test_the_image_alone_refuses_every_interface_without_keys_and_tls() -> None:
    # `docker run -p 50051:50051` of the bare image must not serve the network in plaintext.
    settings = load_settings(environ=image_env())
    with pytest.raises(SettingsError, match=r"refusing to listen on 0\.0\.0\.0:50051 without API"):
        listening_tls(settings)


def routed_clusters(config: Mapping[str, Any]) -> Iterator[str]:
    for listener in config["static_resources"]["listeners"]:
        for chain in listener["filter_chains"]:
            for f in chain["filters"]:
                for host in f["typed_config"]["route_config"]["virtual_hosts"]:
                    for route in host["routes"]:
                        yield route["route"]["cluster"]


def test_envoy_balances_grpc_calls_over_the_replicas_port_and_readiness() -> None:
    settings, _ = replica_settings()
    config = envoy()
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
    routed = set(routed_clusters(config))
    assert routed and routed <= set(clusters)
    for name in routed:
        cluster = clusters[name]
        assert cluster["type"] == "STRICT_DNS" and cluster["lb_policy"] == "ROUND_ROBIN"
        options = cluster["typed_extension_protocol_options"]
        http = options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
        assert "http2_protocol_options" in http["explicit_http_config"]
        addresses = [
            endpoint["endpoint"]["address"]["socket_address"]
            for group in cluster["load_assignment"]["endpoints"]
            for endpoint in group["lb_endpoints"]
        ]
        assert addresses
        for address in addresses:
            assert address["address"] == REPLICAS
            assert address["port_value"] == settings.port
        checks = [c["grpc_health_check"] for c in cluster["health_checks"]]
        assert checks and all(c["service_name"] == SERVICE_NAME for c in checks)
    assert str(settings.port) in arguments("EXPOSE")[0].split()


def test_envoy_is_the_one_published_port() -> None:
    services = compose()["services"]
    assert [name for name, s in services.items() if s.get("ports")] == ["envoy"]
    proxy = services["envoy"]
    assert "./deploy/envoy.yaml:/etc/envoy/envoy.yaml:ro" in proxy["volumes"]
    published = [str(p).split(":") for p in proxy["ports"]]
    listening = {
        listener["address"]["socket_address"]["port_value"]
        for listener in envoy()["static_resources"]["listeners"]
    }
    assert len(published) == 1 and int(published[0][-1]) in listening
    assert proxy["depends_on"][REPLICAS]["condition"] == "service_healthy"


def probe(port: int) -> subprocess.CompletedProcess[str]:
    """Runs the image's health probe, as Docker does, against a server on this port."""
    env = {"CONTEXTWM_HOST": "0.0.0.0", "CONTEXTWM_PORT": str(port), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=30
    )


def test_the_probe_passes_only_while_the_server_is_ready(tmp_path: Path) -> None:
    settings = ServerSettings(
        port=0, data_dir=tmp_path, embedder="hashing", indexer_process=False, grace_seconds=0.0
    )
    # Listening, not loaded yet: live (liveness SERVING) but not ready.
    listening = Service.listen(settings)
    port = listening.port
    try:
        starting = probe(port)
        assert starting.returncode == 1
        assert f"{SERVICE_NAME} is NOT_SERVING" in starting.stderr
    except BaseException:
        listening.abandon()
        raise
    service = listening.load()
    try:
        ready = probe(port)
        assert ready.returncode == 0, ready.stderr
        assert ready.stdout.strip() == f"127.0.0.1:{port}: {SERVICE_NAME} is SERVING"
    finally:
        service.stop(grace=0)
    gone = probe(port)
    assert gone.returncode == 1 and "UNAVAILABLE" in gone.stderr


@pytest.mark.parametrize(
    ("host", "target"),
    [("0.0.0.0", "127.0.0.1:7"), ("::", "[::1]:7"), ("10.1.2.3", "10.1.2.3:7"), ("::1", "[::1]:7")],
)
def test_the_probe_reaches_the_listening_address_from_inside(host: str, target: str) -> None:
    probe_module = runpy.run_path(str(PROBE))
    assert probe_module["target"]({"CONTEXTWM_HOST": host, "CONTEXTWM_PORT": "7"}) == target
