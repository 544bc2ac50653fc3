#!/usr/bin/python3
"""Checks the deployment files: the Kubernetes manifests parse and agree with
each other and with the image, the StatefulSet launcher turns a pod's name into
the right cluster flags, and the shell scripts pass shellcheck (the sbatch
script also refuses a missing program). Exits 77 (skipped) where Python's yaml
module or shellcheck is missing."""

import os
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("check_deploy: skipped, python3-yaml is not installed "
          "(scripts/install_deps.sh installs it)")
    sys.exit(77)
if shutil.which("shellcheck") is None:
    print("check_deploy: skipped, shellcheck is not installed "
          "(scripts/install_deps.sh installs it)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = {"fashion_mnist", "between_graph_matmul"}
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def load(name):
    with open(os.path.join(HERE, "kubernetes", name)) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def check_dockerfile():
    with open(os.path.join(HERE, "Dockerfile")) as f:
        text = f.read()
    check("FROM debian:12" in text,
          "Dockerfile: the image must be built FROM debian:12")
    for program in PROGRAMS:
        check(program in text, f"Dockerfile: does not install {program}")


def check_tfjob():
    docs = load("tfjob.yaml")
    check(len(docs) == 1, "tfjob.yaml: expected one document")
    job = docs[0]
    check(job["apiVersion"] == "kubeflow.org/v1" and job["kind"] == "TFJob",
          "tfjob.yaml: not a kubeflow.org/v1 TFJob")
    specs = job["spec"]["tfReplicaSpecs"]
    check(set(specs) <= {"Chief", "Master", "Worker", "PS", "Evaluator"},
          f"tfjob.yaml: unknown replica types {sorted(specs)}")
    check("PS" in specs and "Worker" in specs,
          "tfjob.yaml: needs PS and Worker replicas")
    for rtype, spec in specs.items():
        check(isinstance(spec["replicas"], int) and spec["replicas"] > 0,
              f"tfjob.yaml: {rtype} replicas must be a positive integer")
        containers = spec["template"]["spec"]["containers"]
        # The operator puts TF_CONFIG only into the container so named.
        check([c["name"] for c in containers] == ["tensorflow"],
              f"tfjob.yaml: {rtype} needs one container named tensorflow")
        c = containers[0]
        check(c["command"][0].startswith("/opt/distflow/bin/") and
              os.path.basename(c["command"][0]) in PROGRAMS,
              f"tfjob.yaml: {rtype} runs {c['command'][0]}, not a program "
              "of the image")
        ports = {p.get("name"): p["containerPort"] for p in c["ports"]}
        check(ports.get("tfjob-port") == 2222,
              f"tfjob.yaml: {rtype} must open tfjob-port 2222, the port the "
              "operator writes into TF_CONFIG")


def check_statefulsets():
    docs = load("statefulset.yaml")
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    services = by_kind.get("Service", {})
    sets = by_kind.get("StatefulSet", {})
    check(set(sets) == {"distflow-ps", "distflow-worker"},
          f"statefulset.yaml: StatefulSets {sorted(sets)}")
    replicas = {name.split("-")[-1]: s["spec"]["replicas"]
                for name, s in sets.items()}
    for name, sts in sets.items():
        spec = sts["spec"]
        service = services.get(spec["serviceName"])
        check(service is not None,
              f"statefulset.yaml: {name}'s service {spec['serviceName']} "
              "is missing")
        if service is None:
            continue
        check(service["spec"].get("clusterIP") == "None",
              f"statefulset.yaml: service {spec['serviceName']} is not "
              "headless")
        labels = spec["template"]["metadata"]["labels"]
        check(spec["selector"]["matchLabels"] == labels and
              service["spec"]["selector"] == labels,
              f"statefulset.yaml: {name}'s selectors do not match its pods")
        container = spec["template"]["spec"]["containers"][0]
        check(os.path.basename(container["args"][0]) in PROGRAMS,
              f"statefulset.yaml: {name} runs {container['args'][0]}")
        env = {e["name"]: e.get("value") for e in container["env"]}
        for job in ("ps", "worker"):
            check(env[f"DISTFLOW_{job.upper()}_REPLICAS"] ==
                  str(replicas[job]),
                  f"statefulset.yaml: {name} says DISTFLOW_"
                  f"{job.upper()}_REPLICAS={env[f'DISTFLOW_{job.upper()}_REPLICAS']}"
                  f" but StatefulSet distflow-{job} has {replicas[job]}")
    check_launcher(by_kind["ConfigMap"]["distflow-launch"], sets)


def check_launcher(config_map, sets):
    """Runs launch.sh as pod distflow-worker-1 would, with echo as the
    program, and compares the flags with the pods' DNS names."""
    script = config_map["data"]["launch.sh"]
    env = dict(os.environ, POD_NAME="distflow-worker-1", DISTFLOW_NAME="distflow",
               DISTFLOW_PS_REPLICAS="2", DISTFLOW_WORKER_REPLICAS="3",
               DISTFLOW_PORT="2222", POD_NAMESPACE="research")
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
        f.write(script)
        f.flush()
        out = subprocess.run(
            ["/bin/sh", f.name, "worker", "echo", "--issync=1"], env=env,
            capture_output=True, text=True, timeout=30)
        check(out.returncode == 0, f"launch.sh failed: {out.stderr}")
        shellcheck(["--shell=sh", f.name], "launch.sh")

        def hosts(job, n):
            service = sets[f"distflow-{job}"]["spec"]["serviceName"]
            return ",".join(f"distflow-{job}-{i}.{service}.research.svc."
                            f"cluster.local:2222" for i in range(n))
        expected = (f"--issync=1 --job_name=worker --task_index=1 "
                    f"--ps_hosts={hosts('ps', 2)} "
                    f"--worker_hosts={hosts('worker', 3)}")
        check(out.stdout.strip() == expected,
              f"launch.sh printed\n  {out.stdout.strip()}\nexpected\n  "
              f"{expected}")
        env["POD_NAME"] = "distflow"
        out = subprocess.run(["/bin/sh", f.name, "ps", "echo"], env=env,
                             capture_output=True, text=True, timeout=30)
        check(out.returncode == 1 and "does not end in a StatefulSet "
              "ordinal" in out.stderr,
              f"launch.sh accepted pod name 'distflow': {out.stdout}")


def shellcheck(args, what):
    out = subprocess.run(["shellcheck"] + args, capture_output=True,
                         text=True, timeout=60)
    check(out.returncode == 0, f"shellcheck {what}:\n{out.stdout}")


def check_sbatch():
    script = os.path.join(HERE, "slurm", "distflow.sbatch")
    shellcheck([script], "distflow.sbatch")
    out = subprocess.run(["bash", "-n", script], capture_output=True,
                         text=True, timeout=30)
    check(out.returncode == 0, f"distflow.sbatch: {out.stderr}")
    out = subprocess.run(["bash", script, "/nonexistent/trainer"],
                         capture_output=True, text=True, timeout=30)
    check(out.returncode == 1 and "'/nonexistent/trainer' is not an "
          "executable" in out.stderr,
          f"distflow.sbatch ran a missing program: {out.stderr}")


check_dockerfile()
check_tfjob()
check_statefulsets()
check_sbatch()
for failure in failures:
    print("FAIL:", failure)
if failures:
    sys.exit(1)
print("check_deploy: the Dockerfile, tfjob.yaml, statefulset.yaml and "
      "distflow.sbatch are consistent")
