"""The Docker files agree with each other and with the project, read without Docker: the image
installs the torch scripts/setup pins, from the CPU index, before the packages; the replicas'
command and environment, read by contextwm's own flag parser and settings loader, serve the
compose file's database on 0.0.0.0, as insecure (only Envoy reaches them), where the image
alone refuses to; Envoy sends HTTP/2 to the replicas' service and port and checks the
readiness name the server reports; the image's health probe answers as the server's
health does (against a real server on loopback); the README's one-container recipe serves
the embedded default from the image's volume; and the image's Python packages build, offline,
from exactly the files the Dockerfile copies."""

from __future__ import annotations

import argparse
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import urllib.parse
import zipfile
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
README = ROOT / "README.md"
DOCKERIGNORE = ROOT / ".dockerignore"
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


# --- the README's one container --------------------------------------------------------


def readme_docker_commands() -> list[list[str]]:
    (block,) = re.findall(r"### With Docker.*?```sh\n(.*?)```", README.read_text(), flags=re.S)
    lines = [shlex.split(line) for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line]


def docker_run(argv: list[str]) -> tuple[dict[str, list[str]], str, list[str]]:
    """`docker run`'s options by name (short ones as given), the image, and the command."""
    options: dict[str, list[str]] = {}
    flags = {"-d", "--detach", "--rm", "-i", "-t", "--init"}
    i = 0
    while argv[i].startswith("-"):
        if argv[i] in flags:
            options.setdefault(argv[i], [])
            i += 1
        else:
            options.setdefault(argv[i], []).append(argv[i + 1])
            i += 2
    return options, argv[i], argv[i + 1 :]


def test_the_readme_runs_one_container_on_the_embedded_default_with_a_volume() -> None:
    build, run = readme_docker_commands()
    assert build[:2] == ["docker", "build"] and build[-1] == "."
    tag = build[build.index("-t") + 1]
    assert run[:2] == ["docker", "run"]
    options, image, command = docker_run(run[2:])
    assert image == tag
    command = command or exec_form("CMD")
    assert exec_form("ENTRYPOINT") == ["contextwm"] and command[0] == "serve"
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    flags = parser.parse_args(command[1:])
    given = dict(e.split("=", 1) for e in options.get("-e", []))
    settings = load_settings(flags.config, {**image_env(), **given}, flag_settings(flags))
    assert settings.store == "" and settings.embedder == "minilm"  # the embedded default
    # The data directory is a named volume, the image's VOLUME.
    (volume,) = options["-v"]
    name, mount = volume.split(":")[:2]
    assert "/" not in name and mount == str(settings.data_dir)
    assert mount in {yaml.safe_load(v)[0] for v in arguments("VOLUME")}
    # Every interface inside the container, allowed in so many words; published on the host's
    # loopback only.
    assert settings.host == "0.0.0.0" and settings.insecure
    assert listening_tls(settings) is None
    (published,) = options["-p"]
    host, host_port, container_port = published.split(":")
    assert host == "127.0.0.1" and int(container_port) == settings.port
    assert host_port == "50051"


# --- the image's packages, from what it copies ------------------------------------------


def dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    """.dockerignore as (negated, regex): Docker's matching, where `**` spans directories,
    `*` and `?` do not, and a pattern anchors at the context's root."""
    patterns = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip("/"))
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            else:
                c = pattern[i]
                regex += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                i += 1
        patterns.append((negated, re.compile(regex + r"\Z")))
    return patterns


def ignored(relative: Path, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether Docker leaves the file out of the build context: a pattern matches it or one of
    its directories; the last pattern that matches decides."""
    prefixes = ["/".join(relative.parts[: n + 1]) for n in range(len(relative.parts))]
    verdict = False
    for negated, regex in patterns:
        if any(regex.match(p) for p in prefixes):
            verdict = not negated
    return verdict


def copied_files() -> dict[Path, Path]:
    """What the Dockerfile's COPY lines put under its WORKDIR: destination (relative to it)
    by source, each a file of the build context."""
    patterns = dockerignore_patterns()
    files: dict[Path, Path] = {}
    for rest in arguments("COPY"):
        words = [w for w in shlex.split(rest) if not w.startswith("--")]
        *sources, destination = words
        if destination.startswith("/"):
            continue  # outside the packages' build (the health probe)
        for source in sources:
            top = ROOT / source
            found = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
            for path in found:
                relative = path.relative_to(ROOT)
                if ignored(relative, patterns):
                    continue
                inside = relative.relative_to(source) if top.is_dir() else Path(relative.name)
                files[Path(destination) / inside] = path
    return files


def test_dockerignore_matching_follows_docker() -> None:
    patterns = dockerignore_patterns()
    assert ignored(Path("server/contextwm/__pycache__/app.cpython-311.pyc"), patterns)
    assert ignored(Path(".git/HEAD"), patterns)
    assert ignored(Path("client/build/lib/x.py"), patterns)
    assert not ignored(Path("server/contextwm/app.py"), patterns)
    assert not ignored(Path("server/contextwm/inspector/static/index.html"), patterns)


def test_the_images_packages_build_offline_from_exactly_the_files_it_copies(
    tmp_path: Path,
) -> None:
    context = tmp_path / "src"  # the image's WORKDIR
    files = copied_files()
    for destination, source in files.items():
        (context / destination).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, context / destination)
    runs = arguments("RUN")
    (install,) = [run for run in runs if re.search(r"pip install .*\./client \.", run)]
    assert "./client ." in install  # the two packages the image installs, in this order
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--no-index", "--wheel-dir", str(wheels), "./client", "."),
        ],
        cwd=context,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (server_wheel,) = wheels.glob("contextwm-*.whl")
    (client_wheel,) = wheels.glob("contextwm_client-*.whl")
    # Every module and data file of the packages is in its wheel.
    for wheel, root in ((server_wheel, "server"), (client_wheel, "client")):
        names = set(zipfile.ZipFile(wheel).namelist())
        expected = {
            str(destination.relative_to(root))
            for destination in files
            if destination.parts[0] == root
            and destination.suffix in (".py", ".pyi", ".html", ".css", ".js", ".typed")
        }
        assert expected and expected <= names, sorted(expected - names)
    # Installed alone, they import and run from there, not from this checkout.
    site = tmp_path / "site"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"),
            *("--target", str(site), str(server_wheel), str(client_wheel)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    probe = (
        "import contextwm, contextwm_client, contextwm.cli.entry, contextwm.mcp_server.command;"
        "print(contextwm.__file__); print(contextwm_client.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    ran = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    assert all(line.startswith(str(site)) for line in ran.stdout.splitlines()), ran.stdout
    help_text = subprocess.run(
        [sys.executable, "-m", "contextwm", "serve", "--help"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert help_text.returncode == 0 and "--data-dir" in help_text.stdout, help_text.stderr
