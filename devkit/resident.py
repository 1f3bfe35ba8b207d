"""The resident set of this process, and its peak since a moment (Linux): what a run allocated,
Python's objects and the rest (the Protobuf runtime's, a codec's), unlike `tracemalloc`, which
sees Python's alone and slows the code it traces several times over."""

from __future__ import annotations


def peak_reset() -> int:
    """Forget the process's peak resident set (`/proc/self/clear_refs`); the resident set now,
    in KB."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return _status_kb("VmRSS")


def peak_above(resident: int) -> float:
    """MB of the peak resident set since `peak_reset` above `resident` (KB)."""
    return max(_status_kb("VmHWM") - resident, 0) / 1024


def now_above(resident: int) -> float:
    """MB of the resident set now above `resident` (KB): what a run kept."""
    return max(_status_kb("VmRSS") - resident, 0) / 1024


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")
