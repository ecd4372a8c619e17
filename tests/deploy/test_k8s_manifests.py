"""The Kubernetes example: the properties the README promises (native
sidecar, shared socket, probes on `holdfastctl health`, locked-down
containers) and a ConfigMap config that the real holdfastd accepts."""
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


def test_probes_call_holdfastctl_health(sidecar):
    health = ["holdfastctl", "--socket", SOCKET, "health"]
    assert sidecar["startupProbe"]["exec"]["command"] == health
    assert sidecar["readinessProbe"]["exec"]["command"] == health
    # Liveness ignores "not ready" (exit 1) so a Redis outage does not
    # restart every sidecar; only "unreachable" (exit 2) fails it.
    live = " ".join(sidecar["livenessProbe"]["exec"]["command"])
    assert "health" in live and "-ne 2" in live and SOCKET in live


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
