"""The systemd units: `systemd-analyze verify` (with the built binaries in
place of /usr/sbin and /usr/bin, which need not exist on a build machine),
and the offline security review of the hardening."""
import json
import re
import shutil
import subprocess

import pytest

from deploy_helpers import DEPLOY, UNITS

UNIT_FILES = ["holdfastd.service", "holdfastd.socket",
              "holdfast-metrics.service", "holdfast-metrics.timer"]


@pytest.fixture
def units_for_build(tmp_path, binaries):
    """Copies of the units whose commands point at the built binaries, plus a
    MANPATH holding the shipped man pages so Documentation= is checked too.
    Everything else is byte-for-byte what the package installs."""
    unit_dir = tmp_path / "units"
    unit_dir.mkdir()
    for name in UNIT_FILES:
        text = (UNITS / name).read_text()
        text = text.replace("/usr/sbin/holdfastd", str(binaries["holdfastd"]))
        text = text.replace("/usr/bin/holdfastctl", str(binaries["holdfastctl"]))
        text = text.replace("/usr/libexec/holdfast/metrics-textfile",
                            str(DEPLOY / "metrics-textfile.sh"))
        (unit_dir / name).write_text(text)
    man = tmp_path / "man"
    for page, section in (("holdfastd.8", "man8"), ("holdfastctl.1", "man1")):
        (man / section).mkdir(parents=True, exist_ok=True)
        shutil.copy(DEPLOY / "debian" / "man" / page, man / section / page)
    return unit_dir, man


def test_units_verify_clean(units_for_build):
    unit_dir, man = units_for_build
    proc = subprocess.run(
        ["systemd-analyze", "verify", *[str(unit_dir / u) for u in UNIT_FILES]],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "MANPATH": str(man)})
    # verify exits 0 on some warnings (an unknown Type= is only "ignoring"),
    # so any output at all is a failure.
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == "", \
        proc.stdout + proc.stderr


def test_service_hardening_review():
    """The offline review scores exposure 0-10 (x10 for --threshold); keep
    the service below 2.0 and the required settings in force."""
    proc = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", "--threshold=20", "--json=short",
         str(UNITS / "holdfastd.service")],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)}
    required = ["NoNewPrivileges=", "ProtectSystem=", "ProtectHome=", "PrivateTmp=",
                "PrivateDevices=", "ProtectKernelTunables=", "ProtectKernelModules=",
                "ProtectControlGroups=", "RestrictNamespaces=~user", "MemoryDenyWriteExecute=",
                "LockPersonality=", "SystemCallArchitectures=", "SystemCallFilter=~@privileged",
                "RestrictAddressFamilies=~AF_PACKET", "RestrictAddressFamilies=~AF_NETLINK",
                "CapabilityBoundingSet=~CAP_SYS_ADMIN", "User=/DynamicUser=", "UMask="]
    unmet = [n for n in required if not checks[n]["set"]]
    assert not unmet, f"hardening settings not in force: {unmet}"


def _ini_values(path, key):
    return [line.split("=", 1)[1].strip() for line in path.read_text().splitlines()
            if line.startswith(key + "=")]


def test_socket_unit_matches_default_config():
    """holdfastctl's default path, the socket unit and the shipped config name
    the same socket; the daemon's user group is the socket's group."""
    listen = _ini_values(UNITS / "holdfastd.socket", "ListenStream")
    config = (DEPLOY / "holdfast.lua").read_text()
    m = re.search(r'socket\s*=\s*\{[^}]*?\bpath\s*=\s*"([^"]+)"', config, re.S)
    assert m, "no socket.path in deploy/holdfast.lua"
    assert listen == [m.group(1)] == ["/run/holdfast/holdfast.sock"]
    assert _ini_values(UNITS / "holdfastd.socket", "SocketGroup") == \
        _ini_values(UNITS / "holdfastd.service", "Group") == ["holdfast"]
    assert _ini_values(UNITS / "holdfastd.socket", "SocketMode") == ["0660"]
    # The socket lives in the service's RuntimeDirectory, which therefore
    # must survive a stop of the service while the socket unit listens on.
    assert _ini_values(UNITS / "holdfastd.service", "RuntimeDirectory") == ["holdfast"]
    assert _ini_values(UNITS / "holdfastd.service", "RuntimeDirectoryPreserve") == ["yes"]
