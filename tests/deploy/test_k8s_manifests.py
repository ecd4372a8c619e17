"""The Kubernetes example: the properties the README promises (native
sidecar, shared socket, probes and scrapes on holdfastd's HTTP listener,
locked-down containers) and a ConfigMap config that the real holdfastd
accepts."""
import re
import subprocess

import pytest
import yaml

from deploy_helpers import DEPLOY

K8S = DEPLOY / "k8s"
SOCKET = "/run/holdfast/holdfast.sock"


def _docs(name):
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


@pytest.fixture(scope="module")
def pod():
    (deployment,) = _docs("deployment.yaml")
    assert deployment["kind"] == "Deployment"
    spec = deployment["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    return spec["template"]["spec"]


@pytest.fixture(scope="module")
def sidecar(pod):
    (c,) = [c for c in pod["initContainers"] if c["name"] == "holdfastd"]
    return c


def test_kustomization_lists_every_manifest():
    (k,) = _docs("kustomization.yaml")
    assert sorted(k["resources"]) == sorted(
        p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def test_holdfastd_is_a_native_sidecar(sidecar):
    # An init container that keeps running: started before the app, stopped
    # after it.
    assert sidecar["restartPolicy"] == "Always"


def test_socket_dir_is_a_shared_emptydir(pod, sidecar):
    vols = {v["name"]: v for v in pod["volumes"]}
    (mount,) = [m for m in sidecar["volumeMounts"] if m["mountPath"] == "/run/holdfast"]
    assert "emptyDir" in vols[mount["name"]]
    app_mounts = [m for c in pod["containers"] if c["name"] == "app" for m in c["volumeMounts"]]
    assert any(m["name"] == mount["name"] and m["mountPath"] == "/run/holdfast"
               for m in app_mounts)
    # The group that may open the 0660 socket.
    assert pod["securityContext"]["fsGroup"] == sidecar["securityContext"]["runAsGroup"]


def _http_port(sidecar):
    (port,) = [p for p in sidecar["ports"] if p["name"] == "holdfast-http"]
    assert port.get("protocol", "TCP") == "TCP"
    return port["containerPort"]


def _config_text():
    (cm,) = _docs("configmap.yaml")
    return cm["data"]["holdfast.lua"]


def test_http_listener_matches_the_config(pod, sidecar):
    # The config listens on every address of the pod (the kubelet and
    # Prometheus come in on the pod IP), on the port the sidecar declares.
    m = re.search(r'metrics = \{ http = true, http_address = "0\.0\.0\.0:(\d+)" \}',
                  _config_text())
    assert m, "configmap.yaml does not turn metrics.http on"
    assert int(m.group(1)) == _http_port(sidecar)


def test_probes_use_readyz_and_healthz(sidecar):
    for probe in ("startupProbe", "readinessProbe"):
        assert sidecar[probe]["httpGet"] == {"path": "/readyz", "port": "holdfast-http"}, probe
    # Liveness ignores readiness (a Redis outage must not restart every
    # sidecar): /healthz answers while the daemon's loop runs.
    assert sidecar["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "holdfast-http"}


def test_prometheus_scrapes_the_daemon(pod, sidecar):
    (deployment,) = _docs("deployment.yaml")
    notes = deployment["spec"]["template"]["metadata"]["annotations"]
    assert notes["prometheus.io/scrape"] == "true"
    assert notes["prometheus.io/path"] == "/metrics"
    assert int(notes["prometheus.io/port"]) == _http_port(sidecar)
    # No textfile exporter any more: no containers but the daemon and the app.
    names = [c["name"] for c in pod["initContainers"] + pod["containers"]]
    assert names == ["holdfastd", "app"]
    assert [v["name"] for v in pod["volumes"]] == ["holdfast-run", "holdfast-config"]


def test_containers_are_locked_down(pod):
    assert pod["securityContext"]["runAsNonRoot"] is True
    for c in pod["initContainers"] + pod["containers"]:
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True, c["name"]
        assert sc["allowPrivilegeEscalation"] is False, c["name"]
        assert sc["capabilities"]["drop"] == ["ALL"], c["name"]
        assert c["resources"]["requests"] and c["resources"]["limits"]["memory"], c["name"]


def test_configmap_config_is_valid(tmp_path, binaries, sidecar):
    (cm,) = _docs("configmap.yaml")
    config = tmp_path / "holdfast.lua"
    config.write_text(cm["data"]["holdfast.lua"])
    proc = subprocess.run([str(binaries["holdfastd"]), "--check-config", str(config)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f'path = "{SOCKET}"' in cm["data"]["holdfast.lua"]
    (cfg_mount,) = [m for m in sidecar["volumeMounts"] if m["name"] == "holdfast-config"]
    assert sidecar["args"] == ["--config", cfg_mount["mountPath"] + "/holdfast.lua"]
