"""The Debian package: contents, lintian, and a real `dpkg -i` into a clean
Debian root made with debootstrap (from Debian's mirror, ~30 s): the system
user appears, the shipped config passes --check-config as root and as the
daemon's user, and remove/purge leave nothing behind but the user."""
import filecmp
import gzip
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from deploy_helpers import DEPLOY, REPO, UNITS, build_dir

MIRROR = os.environ.get("HOLDFAST_DEBIAN_MIRROR", "http://deb.debian.org/debian")


@pytest.fixture(scope="session")
def deb():
    debs = sorted(build_dir().glob("holdfast_*_amd64.deb"), key=lambda p: p.stat().st_mtime)
    if not debs:
        pytest.fail(f"no holdfast_*_amd64.deb in {build_dir()}: "
                    "run `cmake --build BUILD --target package` (tools/test-deploy.sh does)")
    return debs[-1]


def _run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def _field(deb, name):
    return _run("dpkg-deb", "-f", deb, name).stdout.strip()


def test_package_contents(deb):
    listing = _run("dpkg-deb", "-c", deb).stdout
    paths = {line.split()[-1].lstrip(".") for line in listing.splitlines()}
    expected = {
        "/usr/sbin/holdfastd", "/usr/bin/holdfastctl", "/etc/holdfast/holdfast.lua",
        "/lib/systemd/system/holdfastd.service", "/lib/systemd/system/holdfastd.socket",
        "/lib/systemd/system/holdfast-metrics.service",
        "/lib/systemd/system/holdfast-metrics.timer",
        "/usr/lib/sysusers.d/holdfast.conf", "/usr/libexec/holdfast/metrics-textfile",
        "/usr/share/doc/holdfast/copyright", "/usr/share/doc/holdfast/changelog.Debian.gz",
        "/usr/share/man/man8/holdfastd.8.gz", "/usr/share/man/man1/holdfastctl.1.gz",
    }
    expected |= {f"/usr/share/holdfast/scripts/{p.name}" for p in (REPO / "scripts").glob("*.lua")}
    expected |= {f"/usr/share/holdfast/migrations/{p.name}"
                 for p in (REPO / "daemon" / "sql" / "migrations").glob("*.sql")}
    assert "/usr/share/holdfast/scripts/holdfast.lua" in expected
    missing = sorted(expected - paths)
    assert not missing, f"missing from the package: {missing}"

    conffiles = _run("dpkg-deb", "-I", deb, "conffiles").stdout.split()
    assert conffiles == ["/etc/holdfast/holdfast.lua"]
    depends = _field(deb, "Depends")
    assert "adduser" in depends
    assert re.search(r"\blibc6 \(>= ", depends), f"shlibdeps did not run: {depends}"
    # metrics.http links libmicrohttpd dynamically.
    assert re.search(r"\blibmicrohttpd12\b", depends), depends

    # The changelog's top entry is this package's version (lintian checks
    # the same; a mismatch means the template was not configured).
    version = _field(deb, "Version")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        head = gzip.open(Path(tmp) / "usr/share/doc/holdfast/changelog.Debian.gz", "rt").readline()
        assert head.startswith(f"holdfast ({version}) "), head
        assert filecmp.cmp(Path(tmp) / "etc/holdfast/holdfast.lua", DEPLOY / "holdfast.lua",
                           shallow=False)


def test_lintian_reports_no_errors(deb):
    if not shutil.which("lintian"):
        pytest.fail("lintian is not installed (tools/deps-deploy.sh installs it)")
    proc = _run("lintian", "--fail-on", "error", "--tag-display-limit", "0", deb)
    print(proc.stdout, proc.stderr)  # warnings stay visible in -rA / -s runs
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not re.search(r"^E: ", proc.stdout, re.M), proc.stdout


def _mounts_under(root: Path):
    prefix = str(root) + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


def _remove_root(root: Path):
    # debootstrap mounts /proc and /sys inside while it works; never rm -rf
    # through a mount that is still there.
    for point in _mounts_under(root):
        subprocess.run(["umount", "-l", point], check=False)
    if _mounts_under(root):
        print(f"leaving {root}: still has mounts")
        return
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def clean_root(deb):
    """A minimal Debian root of this machine's release with the package's
    dependencies pre-installed, so `dpkg -i` needs no apt and no network."""
    if os.geteuid() != 0:
        pytest.skip("debootstrap and chroot need root (CI runs as root)")
    if not shutil.which("debootstrap"):
        pytest.fail("debootstrap is not installed (tools/deps-deploy.sh installs it)")
    release = dict(line.strip().split("=", 1) for line in
                   open("/etc/os-release") if "=" in line)
    suite = release.get("VERSION_CODENAME", "").strip('"')
    assert suite, "cannot tell the Debian release from /etc/os-release"
    # Depends: "libc6 (>= 2.34), adduser, a | b" -> package names.
    include = [alt.split("|")[0].split("(")[0].strip()
               for alt in _field(deb, "Depends").split(",") if alt.strip()]
    cache = build_dir() / "debootstrap-cache"
    cache.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="deploy-root-", dir=build_dir()))
    root.chmod(0o755)  # it becomes "/": mkdtemp's 0700 would lock out non-root users
    log = build_dir() / "debootstrap.log"
    try:
        with open(log, "w") as out:
            rc = subprocess.run(
                ["debootstrap", "--variant=minbase", f"--cache-dir={cache}",
                 f"--include={','.join(include)}", suite, str(root), MIRROR],
                stdout=out, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            pytest.fail(f"debootstrap failed (rc {rc}), see {log}:\n"
                        + "".join(open(log).readlines()[-20:]))
        shutil.copy(deb, root / "tmp" / deb.name)
        yield root, f"/tmp/{deb.name}"
    finally:
        _remove_root(root)


def _chroot(root, *cmd):
    return _run("chroot", root, *cmd)


def test_install_upgrade_remove_purge_in_clean_root(clean_root):
    root, deb_in_root = clean_root

    inst = _chroot(root, "dpkg", "-i", deb_in_root)
    assert inst.returncode == 0, inst.stdout + inst.stderr

    # The system user exists, with no home and no login shell.
    pw = _chroot(root, "getent", "passwd", "holdfast").stdout.strip().split(":")
    assert pw[0] == "holdfast" and pw[5] == "/nonexistent" and pw[6] == "/usr/sbin/nologin", pw
    assert _chroot(root, "getent", "group", "holdfast").returncode == 0

    # The config is the daemon's alone: the holdfast group is for callers.
    st = (root / "etc/holdfast/holdfast.lua").stat()
    assert oct(st.st_mode & 0o7777) == "0o600"
    assert st.st_uid == int(pw[2]) and st.st_gid == 0

    # The shipped default config validates, as root and as the daemon user
    # (which is how ExecStartPre= runs it).
    for cmd in (["/usr/sbin/holdfastd", "--check-config", "/etc/holdfast/holdfast.lua"],
                ["runuser", "-u", "holdfast", "--", "/usr/sbin/holdfastd", "--check-config",
                 "/etc/holdfast/holdfast.lua"]):
        check = _chroot(root, *cmd)
        assert check.returncode == 0, f"{cmd}: {check.stdout}{check.stderr}"
    # holdfastctl runs in the clean root and says "unreachable" (exit 2).
    ctl = _chroot(root, "/usr/bin/holdfastctl", "--socket", "/tmp/none.sock", "health")
    assert ctl.returncode == 2, ctl.stdout + ctl.stderr

    # Units installed as written; only the socket is enabled.
    for name in ("holdfastd.service", "holdfastd.socket"):
        assert filecmp.cmp(root / "lib/systemd/system" / name, UNITS / name, shallow=False)
    wants = root / "etc/systemd/system"
    assert (wants / "sockets.target.wants/holdfastd.socket").is_symlink()
    assert not (wants / "multi-user.target.wants/holdfastd.service").exists()

    # Installing again runs the upgrade path of the maintainer scripts.
    again = _chroot(root, "dpkg", "-i", deb_in_root)
    assert again.returncode == 0, again.stdout + again.stderr

    rm = _chroot(root, "dpkg", "-r", "holdfast")
    assert rm.returncode == 0, rm.stdout + rm.stderr
    assert not (root / "usr/sbin/holdfastd").exists()
    assert (root / "etc/holdfast/holdfast.lua").exists(), "remove must keep the conffile"

    purge = _chroot(root, "dpkg", "--purge", "holdfast")
    assert purge.returncode == 0, purge.stdout + purge.stderr
    assert not (root / "etc/holdfast").exists()
    assert "holdfast" not in _chroot(root, "dpkg-statoverride", "--list").stdout
    assert not (wants / "sockets.target.wants/holdfastd.socket").exists()
