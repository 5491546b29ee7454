"""Where a served model runs, for the metrics: the number of nodes each (EP, device) pair got,
read from nxrt's assignment report (subgraphs inside If/Loop/Scan bodies included), and the
number of nodes that fell back from the EP they preferred. onnxruntime's sessions do not report
placement per node, so a model served by them has no placement samples rather than made-up ones."""

from collections import Counter

_DEVICE_TYPES = {0: "CPU", 1: "GPU", 2: "NPU"}


def _device_label(devices: list) -> str:
    """'CPU:AuthenticAMD', or several joined by '+' for a group that spans devices; '' when the
    EP names none."""
    names = []
    for d in devices:
        kind = _DEVICE_TYPES.get(d.get("type"), f"type{d.get('type')}")
        vendor = d.get("vendor") or ""
        names.append(f"{kind}:{vendor}" if vendor else kind)
    return "+".join(names)


def placement_of(session):
    """({(ep, device): nodes}, fallback node count), or None for a session that has no
    assignment report (onnxruntime's)."""
    report_of = getattr(session, "assignment_report", None)
    if report_of is None:
        return None
    report = report_of()
    nodes = Counter()
    for group in report.get("subgraphs", []):
        nodes[(group.get("ep_name", ""), _device_label(group.get("devices", [])))] += \
            len(group.get("nodes", []))
    return dict(nodes), len(report.get("fallbacks", []))
