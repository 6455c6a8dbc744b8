"""A one-node SLURM cluster on localhost, for the executor test (recipe: shared/SLURM.md).

Runs as root with Debian's slurm-wlm and munge. No systemd: the daemons are started by hand and
stopped by PID (never by name, so nothing else on the machine is touched).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

SLURM_CONF = Path("/etc/slurm/slurm.conf")  # the job step strips SLURM_CONF: it must live here


def available() -> str | None:
    """None if a cluster can be started here, else the reason (the packages themselves are
    checked by ``sysdeps.require("slurm")``)."""
    if os.geteuid() != 0:
        return "slurm cluster needs root to run slurmctld/slurmd: the SLURM executor test"
    for tool in ("sbatch", "squeue", "mungekey"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            return f"slurm not found ({tool}): the SLURM executor test"
    return None


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 512
    return 2000


def _write_conf(root: Path, host: str, munge_socket: Path) -> str:
    cpus = os.cpu_count() or 1
    return f"""ClusterName=posenc
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldPort=6917
SlurmdPort=6918
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.log
MpiDefault=none
ReturnToService=2
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_memory_mb()} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


# How long a daemon may take to come up before it is taken as hung: a guard, not a deadline (a
# loaded machine starts them slowly).
HANG_S = 600


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise RuntimeError(f"timed out waiting for {what}")


@contextmanager
def local_cluster(root: Path):
    """Start munged, slurmctld and slurmd under ``root``; yield the job-completion log path."""
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(exist_ok=True)
    host = socket.gethostname().split(".")[0]
    munge_dir = root / "munge"
    key, sock = munge_dir / "munge.key", munge_dir / "munge.socket"
    subprocess.run(["mungekey", "--create", "--keyfile", str(key), "--force"], check=True)
    shutil.chown(munge_dir, "munge", "munge")
    shutil.chown(key, "munge", "munge")
    os.chmod(munge_dir, 0o755)  # munged requires the socket directory to be searchable by all
    os.chmod(key, 0o400)
    started: list[int] = []
    backup = None
    try:
        munged = subprocess.Popen(
            [
                "runuser",
                "-u",
                "munge",
                "--",
                "/usr/sbin/munged",
                "--foreground",
                f"--key-file={key}",
                f"--socket={sock}",
                f"--pid-file={munge_dir}/munged.pid",
                f"--log-file={munge_dir}/munged.log",
                f"--seed-file={munge_dir}/munged.seed",
            ],
            # Its log file has what it says; on the terminal its info lines would run through
            # the test session's output (the cluster may run beside other tests).
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(munged.pid)
        _wait(sock.exists, HANG_S, "munged socket")
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        if SLURM_CONF.exists() or SLURM_CONF.is_symlink():
            backup = SLURM_CONF.with_name("slurm.conf.posenc-backup")
            SLURM_CONF.rename(backup)
        SLURM_CONF.write_text(_write_conf(root, host, sock))
        for daemon in ("slurmctld", "slurmd"):
            proc = subprocess.Popen(
                [f"/usr/sbin/{daemon}", "-D", "-f", str(SLURM_CONF)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started.append(proc.pid)

        def node_idle():
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
            return out.returncode == 0 and out.stdout.strip().startswith("idle")

        _wait(node_idle, HANG_S, "the SLURM node to become idle")
        yield root / "jobcomp.log"
    finally:
        for pid in reversed(started):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in reversed(started):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        SLURM_CONF.unlink(missing_ok=True)
        if backup is not None:
            backup.rename(SLURM_CONF)
