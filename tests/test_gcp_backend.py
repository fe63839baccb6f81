"""The gcp sweep's logic against a stand-in for google-cloud-compute. The real client never
ran here (no GCP emulator, no Google provider): this checks only what the sweep asks for and
what it deletes, not Google's answers."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace as NS

import pytest

from deploybench.backends import gcp


class _Op:
    def result(self, timeout=None):
        return None


@pytest.fixture
def compute(monkeypatch):
    calls = {"filters": [], "deleted": [], "firewalls_deleted": []}
    instances = {
        "projects/p/zones/us-central1-a": NS(
            instances=[
                NS(name="db-leak1-0", labels={"deploybench-run": "leak1"}, status="RUNNING"),
                NS(name="db-live1-0", labels={"deploybench-run": "live1"}, status="RUNNING"),
            ]
        ),
        "projects/p/zones/us-central1-b": NS(
            instances=[
                NS(name="db-leak2-0", labels={"deploybench-run": "leak2"}, status="TERMINATED")
            ]
        ),
    }

    class InstancesClient:
        def aggregated_list(self, request):
            calls["filters"].append(request.filter)
            return list(instances.items())

        def delete(self, project, zone, instance):
            calls["deleted"].append((project, zone, instance))
            return _Op()

    class FirewallsClient:
        def list(self, project):
            return [NS(name=f"db-{r}-ssh") for r in ("leak1", "leak2", "live1")] + [
                NS(name="default-allow-ssh")
            ]

        def delete(self, project, firewall):
            calls["firewalls_deleted"].append(firewall)
            return _Op()

    fake = types.ModuleType("google.cloud.compute_v1")
    fake.InstancesClient = InstancesClient
    fake.FirewallsClient = FirewallsClient
    fake.AggregatedListInstancesRequest = lambda project, filter: NS(project=project, filter=filter)
    cloud = types.ModuleType("google.cloud")
    cloud.compute_v1 = fake
    google = sys.modules.get("google") or types.ModuleType("google")
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.cloud", cloud)
    monkeypatch.setitem(sys.modules, "google.cloud.compute_v1", fake)
    return calls


def test_sweep_deletes_leaked_runs_and_keeps_live_ones(compute):
    found = gcp.sweep_gcp("p", "Alice.Smith", live={"live1"}, dry_run=False)
    assert compute["filters"] == ['labels.deploybench-owner = "alice_smith"']
    assert sorted(compute["deleted"]) == [
        ("p", "us-central1-a", "db-leak1-0"),
        ("p", "us-central1-b", "db-leak2-0"),
    ]
    assert sorted(compute["firewalls_deleted"]) == ["db-leak1-ssh", "db-leak2-ssh"]
    assert len(found) == 4 and not any("live1" in f for f in found)


def test_dry_run_deletes_nothing(compute):
    found = gcp.sweep_gcp("p", "deploybench", live=set(), dry_run=True)
    assert compute["deleted"] == [] and compute["firewalls_deleted"] == []
    assert len(found) == 6  # three instances, three run firewall rules


def test_sweep_of_one_run_filters_on_its_label(compute):
    gcp.sweep_gcp("p", "deploybench", live=set(), dry_run=True, run_id="leak1")
    assert compute["filters"] == [
        'labels.deploybench-owner = "deploybench" AND labels.deploybench-run = "leak1"'
    ]


def test_machine_types_follow_the_paper(monkeypatch):
    monkeypatch.delenv("DEPLOYBENCH_GCP_GPU_TYPE", raising=False)
    monkeypatch.delenv("DEPLOYBENCH_GCP_CPU_TYPE", raising=False)
    assert (gcp.machine_type(False), gcp.machine_type(True)) == ("n2-standard-16", "g2-standard-16")
    assert gcp.label_value("Team A/B") == "team_a_b"
