#!/usr/bin/env python3
"""Soak test of `fovea serve` with live RTSP cameras and an MQTT broker (issue 24, "Soak").

  soak.py [--sources 16] [--minutes 60] [--warmup-minutes 5] [--server-restart-s 120]
          [--add-remove-s 60] [--broker-restart-s 300] [--device cpu] [--out soak.json]

Starts N RTSP servers (tests/support/fovea_rtsp_test_server, one process and port per camera), a
mosquitto on a free loopback port and `fovea serve` with a detection flow (fovea's demo detector),
adds the N cameras over the HTTP API, then for the run's length disturbs it as a camera network
does, each on its own period:
  - every --server-restart-s, each camera's server is killed and started again on its port,
    staggered over the period (camera i at i/N of it); the time from the server's "ready" line to
    its source being "running" again with its frame count growing is the camera's resume time;
  - every --add-remove-s, one camera is deleted through the API and posted back (a new slot);
  - every --broker-restart-s, mosquitto is stopped and started again on its port.
Meanwhile it polls GET /sources every --poll-s (an answer must come within --api-timeout-s: the
deadlock check), samples fovea's RSS (and its GPU memory where nvidia-smi exists) every
--sample-s, and checks that fovea is alive. At the end it sends SIGTERM, expects exit code 130,
reads the run report and prints the pass table (also written as JSON to --out):
  alive      fovea never exited before the stop, every API call was answered, exit code 130;
  resume     every resume within --resume-limit-s (max and p95);
  rss / gpu  the value at the end within --memory-tolerance of the one after warm-up (medians over
             --memory-window-s), with the slope after warm-up;
  frames     per source, decoded == batched + dropped, up to the frames in flight at the stop
             (at most --inflight-bound: the mux's per-source queue);
  mqtt       published == delivered + dropped + rejected + queued, and published == the metadata
             file's records.
Exit status: 0 every criterion passed, 1 one failed, 2 the soak itself could not run.

Only the standard library. Every child runs in its own session (a terminal's Ctrl-C reaches this
script only) and dies with the script (PR_SET_PDEATHSIG); on any exit, Ctrl-C included, the script
stops every child it started.
"""

import argparse
import ctypes
import datetime
import heapq
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PR_SET_PDEATHSIG = 1


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.path.join(REPO, "build", "release")
    p.add_argument("--fovea", default=os.path.join(build, "apps", "fovea", "fovea"))
    p.add_argument("--rtsp-server", default=os.path.join(build, "tests", "support", "fovea_rtsp_test_server"))
    p.add_argument("--mosquitto", default="/usr/sbin/mosquitto")
    p.add_argument("--sources", type=int, default=16, help="cameras (default 16)")
    p.add_argument("--minutes", type=float, default=60.0, help="length of the soak (default 60)")
    p.add_argument("--warmup-minutes", type=float, default=5.0, help="memory baseline taken after this (default 5)")
    p.add_argument("--server-restart-s", type=float, default=120.0, help="each camera's server restart period")
    p.add_argument("--server-down-s", type=float, default=1.0, help="how long a killed server stays down")
    p.add_argument("--add-remove-s", type=float, default=60.0, help="period of one DELETE + POST of a camera")
    p.add_argument("--broker-restart-s", type=float, default=300.0, help="mosquitto restart period")
    p.add_argument("--width", type=int, default=320, help="camera frame width")
    p.add_argument("--height", type=int, default=240, help="camera frame height")
    p.add_argument("--fps", type=int, default=15, help="camera frame rate")
    p.add_argument("--batch-size", type=int, default=8, help="mux.batch_size")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"], help="fovea serve --device")
    p.add_argument("--no-mqtt", action="store_true", help="no sinks.mqtt and no broker")
    p.add_argument("--poll-s", type=float, default=0.2, help="GET /sources period")
    p.add_argument("--sample-s", type=float, default=10.0, help="RSS / GPU memory / stats sampling period")
    p.add_argument("--api-timeout-s", type=float, default=5.0, help="an API call unanswered this long fails")
    p.add_argument("--resume-limit-s", type=float, default=5.0, help="pass limit of a resume")
    p.add_argument("--resume-give-up-s", type=float, default=30.0, help="a resume not seen by then is missing")
    p.add_argument("--memory-tolerance", type=float, default=0.02, help="allowed relative memory change")
    p.add_argument("--memory-window-s", type=float, default=60.0, help="window of the memory medians")
    p.add_argument("--inflight-bound", type=int, default=4,
                   help="frames a source may have decoded and not yet batched at the stop")
    p.add_argument("--stop-timeout-s", type=float, default=60.0, help="wait for fovea's exit after SIGTERM")
    p.add_argument("--workdir", help="folder for the model, config, logs and outputs (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the temp workdir")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args(argv)
    if args.warmup_minutes >= args.minutes:
        p.error("--warmup-minutes must be shorter than --minutes")
    if args.sources < 1:
        p.error("--sources must be at least 1")
    return args


def log(message):
    print(f"[{datetime.datetime.now().strftime('%H:%M:%S')}] {message}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[index]


def slope_per_hour(samples):
    """Least-squares slope of (t seconds, value) samples, per hour; None with fewer than 2."""
    if len(samples) < 2:
        return None
    ts = [t for t, _ in samples]
    vs = [v for _, v in samples]
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    den = sum((t - mt) ** 2 for t in ts)
    return None if den == 0 else 3600.0 * sum((t - mt) * (v - mv) for t, v in samples) / den


class Children:
    """Every process the soak starts: each in its own session, killed if this script dies."""

    def __init__(self):
        self.procs = []
        self._libc = ctypes.CDLL(None, use_errno=True)

    def _die_with_parent(self):
        self._libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    def spawn(self, argv, log_path):
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=self._die_with_parent)
        self.procs.append(proc)
        return proc

    @staticmethod
    def stop(proc, sig=signal.SIGTERM, timeout=5.0):
        """Signals `proc` and reaps it, SIGKILL after `timeout`; returns its exit code."""
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
                return proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
        return proc.wait()

    def stop_all(self):
        for proc in self.procs:
            if proc.poll() is None:
                self.stop(proc, signal.SIGTERM, 3.0)
        self.procs = [p for p in self.procs if p.poll() is None]


class Api:
    def __init__(self, port, timeout):
        self.base = f"http://127.0.0.1:{port}"
        self.timeout = timeout

    def call(self, method, path, body=None):
        """(status, parsed JSON or None); status None when no answer came (refused, timed out)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        except (urllib.error.URLError, OSError) as error:
            return None, {"error": str(getattr(error, "reason", error))}
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, None


class Camera:
    """One RTSP server process, restarted on the same port."""

    def __init__(self, index, args, children, logdir):
        self.name = f"cam-{index}"
        self.port = free_port()
        self.argv = [args.rtsp_server, "--port", str(self.port), "--mount", "/cam", "--width", str(args.width),
                     "--height", str(args.height), "--fps", str(args.fps)]
        self.log_path = os.path.join(logdir, f"{self.name}.log")
        self.children = children
        self.proc = None
        self.uri = f"rtsp://127.0.0.1:{self.port}/cam"

    def start(self, timeout=10.0):
        """Starts the server and returns the time its ready line appeared (None: it never did)."""
        for _ in range(3):  # a port just released may refuse a bind for a moment
            offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
            self.proc = self.children.spawn(self.argv, self.log_path)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                with open(self.log_path, "rb") as f:
                    f.seek(offset)
                    if b"ready rtsp://" in f.read():
                        return time.monotonic()
                time.sleep(0.02)
            Children.stop(self.proc, signal.SIGKILL)
            time.sleep(0.5)
        return None

    def kill(self):
        Children.stop(self.proc, signal.SIGKILL)


class Broker:
    def __init__(self, args, children, workdir):
        self.port = free_port()
        self.children = children
        self.args = args
        self.config = os.path.join(workdir, "mosquitto.conf")
        self.log_path = os.path.join(workdir, "logs", "mosquitto.log")
        with open(self.config, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    f"log_dest file {os.path.join(workdir, 'logs', 'broker.log')}\n")
            if os.geteuid() == 0:  # mosquitto would switch to the user "mosquitto"
                f.write("user root\n")
        self.proc = None

    def start(self, timeout=5.0):
        self.proc = self.children.spawn([self.args.mosquitto, "-c", self.config], self.log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if accepts(self.port):
                return True
            time.sleep(0.02)
        return False

    def restart(self):
        Children.stop(self.proc, signal.SIGTERM)
        return self.start()


def make_model(args, workdir):
    """fovea's demo detector and its labels (fovea demo detect writes them with a short clip)."""
    demo = os.path.join(workdir, "demo")
    run = subprocess.run([args.fovea, "demo", "detect", "-o", demo, "--device", args.device, "--frames", "4",
                          "--no-progress", "-q"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    model, labels = os.path.join(demo, "demo_detector.onnx"), os.path.join(demo, "demo_detector.labels")
    if not (os.path.exists(model) and os.path.exists(labels)):
        sys.exit(f"soak: fovea demo detect did not write the model (exit {run.returncode}):\n"
                 f"{run.stdout.decode(errors='replace')}")
    return model, labels


def write_config(args, workdir, model, labels, broker):
    paths = {"config": os.path.join(workdir, "serve.yaml"),
             "metadata": os.path.join(workdir, "out", "frames.jsonl"),
             "report": os.path.join(workdir, "out", "stats.json")}
    os.makedirs(os.path.join(workdir, "out"), exist_ok=True)
    mqtt = "" if broker is None else (
        f"  mqtt:\n    host: 127.0.0.1\n    port: {broker.port}\n    topic_prefix: fovea-soak\n")
    # The demo detector's own normalization (pixel / 255) and labels; its input at the frame size.
    text = f"""# fovea serve soak (bench/soak/soak.py): cameras are added over the API
sources: []
mux:
  batch_size: {args.batch_size}
  width: {args.width}
  height: {args.height}
flow: detection
models:
  - name: demo_detector
    path: {model}
    parser: boxes
    labels: {labels}
    mean: [0, 0, 0]
    std: [1, 1, 1]
    input_width: {args.width}
    input_height: {args.height}
detect:
  confidence: 0.5
sinks:
  metadata:
    path: {paths['metadata']}
{mqtt}stats:
  progress: false
  report: {paths['report']}
"""
    with open(paths["config"], "w") as f:
        f.write(text)
    return paths


def read_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def read_gpu_mib(pid):
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=10).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return None
    used = [int(f.split(",")[1]) for f in out.splitlines() if f.split(",")[0].strip() == str(pid)]
    return sum(used) if used else None


def inflight(stats):
    """Per source of a report (live /stats or the final file): decoded - batched - dropped."""
    return {s["name"]: s.get("decoded", 0) - s.get("frames", 0) - s.get("dropped", 0)
            for s in (stats or {}).get("sources", [])}


class Monitor(threading.Thread):
    """Polls the API and samples memory; measures resumes the main thread registers."""

    def __init__(self, args, api, fovea, t0):
        super().__init__(daemon=True)
        self.args, self.api, self.fovea, self.t0 = args, api, fovea, t0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.latest = {}          # id -> source, from the last answered GET /sources
        self.pending = []         # resumes and re-adds being measured
        self.done = []            # their results
        self.unanswered = []      # (t, path, error)
        self.slowest_answer_s = 0.0
        self.polls = 0
        self.exited_early = None  # (t, exit code)
        self.rss = []             # (t, KiB)
        self.gpu = []             # (t, MiB)
        self.inflight_max = {}    # source -> largest decoded - batched - dropped seen live
        self.events = []          # (t, text) of what the soak did

    def now(self):
        return time.monotonic() - self.t0

    def note(self, text):
        with self.lock:
            self.events.append((round(self.now(), 2), text))
        log(text)

    def expect_resume(self, kind, name, since, reconnects_before=None):
        """Measures from `since` (monotonic) until `name` runs and its frames grow past their count at
        the first poll sent after `since`."""
        with self.lock:
            self.pending.append({"kind": kind, "source": name, "since": since, "baseline": None,
                                 "reconnects_before": reconnects_before})

    def source(self, name):
        with self.lock:
            return dict(self.latest.get(name, {}))

    def run(self):
        next_sample = 0.0
        while not self.stopping.is_set():
            sent = time.monotonic()
            self._poll(sent)
            if sent - self.t0 >= next_sample:
                self._sample()
                next_sample = sent - self.t0 + self.args.sample_s
            self.stopping.wait(max(0.0, self.args.poll_s - (time.monotonic() - sent)))

    def call(self, method, path, body=None):
        """An API call whose answer time counts: none within --api-timeout-s is a hang."""
        start = time.monotonic()
        status, body = self.api.call(method, path, body)
        took = time.monotonic() - start
        with self.lock:
            self.polls += 1
            self.slowest_answer_s = max(self.slowest_answer_s, took)
            if status is None:
                self.unanswered.append((round(self.now(), 2), path, body.get("error")))
        if status is None:
            log(f"no answer to {method} {path} within {self.args.api_timeout_s} s: {body.get('error')}")
        return status, body

    def _poll(self, sent):
        if self.fovea.poll() is not None:
            with self.lock:
                if self.exited_early is None:
                    self.exited_early = (round(self.now(), 2), self.fovea.returncode)
            return
        status, body = self.call("GET", "/sources")
        if status != 200:
            return
        answered = time.monotonic()
        sources = {s["id"]: s for s in body.get("sources", [])}
        with self.lock:
            self.latest = sources
            for item in list(self.pending):
                s = sources.get(item["source"])
                if sent < item["since"]:
                    continue
                if item["baseline"] is None:
                    item["baseline"] = s["frames"] if s else 0
                elif s and s["state"] == "running" and s["frames"] > item["baseline"]:
                    item["seconds"] = answered - item["since"]
                    item["reconnects_after"] = s.get("reconnects")
                    self._finish(item)
                    continue
                if answered - item["since"] > self.args.resume_give_up_s:
                    item["seconds"] = None
                    item["state"] = s["state"] if s else "absent"
                    self._finish(item)

    def _finish(self, item):
        self.pending.remove(item)
        del item["since"]
        self.done.append(item)
        if item["seconds"] is None or item["seconds"] > self.args.resume_limit_s:
            log(f"{item['kind']} of {item['source']}: {item['seconds']} s (state {item.get('state')})")

    def _sample(self):
        t = self.now()
        rss = read_rss_kib(self.fovea.pid)
        gpu = read_gpu_mib(self.fovea.pid)
        status, stats = self.call("GET", "/stats")
        with self.lock:
            if rss is not None:
                self.rss.append((t, rss))
            if gpu is not None:
                self.gpu.append((t, gpu))
            if status == 200:
                for name, frames in inflight(stats).items():
                    self.inflight_max[name] = max(self.inflight_max.get(name, frames), frames)


class Soak:
    def __init__(self, args):
        self.args = args
        self.children = Children()
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="fovea-soak-")
        os.makedirs(os.path.join(self.workdir, "logs"), exist_ok=True)
        self.cameras = []
        self.broker = None
        self.fovea = None
        self.monitor = None
        self.stop_code = None
        self.adds_failed = []

    def run(self):
        a = self.args
        log(f"workdir {self.workdir}")
        model, labels = make_model(a, self.workdir)
        if not a.no_mqtt:
            self.broker = Broker(a, self.children, self.workdir)
            if not self.broker.start():
                sys.exit(f"soak: mosquitto did not start (log {self.broker.log_path})")
        self.paths = write_config(a, self.workdir, model, labels, self.broker)
        self.cameras = [Camera(i, a, self.children, os.path.join(self.workdir, "logs")) for i in range(a.sources)]
        for cam in self.cameras:
            if cam.start() is None:
                sys.exit(f"soak: {cam.name}'s RTSP server did not start (log {cam.log_path})")
        port = free_port()
        self.fovea_log = os.path.join(self.workdir, "logs", "fovea.log")
        self.fovea = self.children.spawn(
            [a.fovea, "serve", self.paths["config"], "--listen", f"127.0.0.1:{port}", "--max-sources",
             str(a.sources + 4), "--device", a.device], self.fovea_log)
        self.api = Api(port, a.api_timeout_s)
        deadline = time.monotonic() + 60
        while self.api.call("GET", "/health")[0] is None:
            if self.fovea.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"soak: fovea serve did not answer (exit {self.fovea.poll()}); log {self.fovea_log}")
            time.sleep(0.2)
        t0 = time.monotonic()
        self.monitor = Monitor(a, self.api, self.fovea, t0)
        self.monitor.start()
        for cam in self.cameras:
            self.add(cam, "add")
        self.schedule_and_run(t0)
        self.stop()
        return self.results()

    def add(self, cam, kind):
        body = {"uri": cam.uri, "name": cam.name, "timeout": 2, "reconnect_initial": 0.2, "reconnect_max": 2}
        since = time.monotonic()
        for _ in range(20):  # a removed source's slot may take a moment to drain
            status, answer = self.monitor.call("POST", "/sources", body)
            if status == 201:
                self.monitor.expect_resume(kind, cam.name, since)
                return True
            if status not in (409, 429, 503):
                break
            time.sleep(0.25)
        self.adds_failed.append((round(self.monitor.now(), 2), cam.name, status, answer))
        self.monitor.note(f"POST /sources {cam.name}: {status} {answer}")
        return False

    def schedule_and_run(self, t0):
        a = self.args
        end = t0 + a.minutes * 60
        queue = []
        for i, cam in enumerate(self.cameras):
            heapq.heappush(queue, (t0 + (i + 1) * a.server_restart_s / len(self.cameras), "restart", i))
        # Half a stagger step after the restarts, so that a camera is never removed as its server dies.
        heapq.heappush(queue, (t0 + a.add_remove_s + a.server_restart_s / len(self.cameras) / 2, "add_remove", 0))
        if self.broker:
            heapq.heappush(queue, (t0 + a.broker_restart_s, "broker", 0))
        busy = set()  # cameras whose restart is being measured: not removed meanwhile
        next_remove = 0
        while True:
            when, kind, i = heapq.heappop(queue)
            if when >= end:
                break
            while time.monotonic() < when:
                if self.monitor.exited_early:
                    return
                time.sleep(min(0.2, when - time.monotonic()))
            with self.monitor.lock:
                busy = {p["source"] for p in self.monitor.pending}
            if kind == "restart":
                cam = self.cameras[i]
                before = self.monitor.source(cam.name).get("reconnects")
                cam.kill()
                time.sleep(a.server_down_s)
                ready = cam.start()
                if ready is None:
                    self.monitor.note(f"{cam.name}: server did not restart")
                else:
                    self.monitor.expect_resume("resume", cam.name, ready, before)
                heapq.heappush(queue, (when + a.server_restart_s, kind, i))
            elif kind == "add_remove":
                for step in range(len(self.cameras)):
                    cam = self.cameras[(next_remove + step) % len(self.cameras)]
                    if cam.name not in busy:
                        break
                next_remove = (self.cameras.index(cam) + 1) % len(self.cameras)
                status, answer = self.monitor.call("DELETE", f"/sources/{cam.name}")
                self.monitor.note(f"DELETE {cam.name}: {status}" + ("" if status == 204 else f" {answer}"))
                if status == 204:
                    self.add(cam, "re-add")
                heapq.heappush(queue, (when + a.add_remove_s, kind, i))
            elif kind == "broker":
                ok = self.broker.restart()
                self.monitor.note(f"mosquitto restarted{'' if ok else ': NOT accepting'}")
                heapq.heappush(queue, (when + a.broker_restart_s, kind, i))

    def stop(self):
        a = self.args
        m = self.monitor
        deadline = time.monotonic() + a.resume_give_up_s
        while m.pending and time.monotonic() < deadline:  # let the resumes in progress finish
            time.sleep(0.2)
        self.final_sources = self.api.call("GET", "/sources")[1]
        self.final_stats = self.api.call("GET", "/stats")[1]
        m.stopping.set()
        m.join()
        if self.fovea.poll() is None:
            m.note("SIGTERM to fovea serve")
            start = time.monotonic()
            try:
                self.fovea.send_signal(signal.SIGTERM)
                self.stop_code = self.fovea.wait(a.stop_timeout_s)
            except subprocess.TimeoutExpired:
                m.note(f"fovea serve still running {a.stop_timeout_s} s after SIGTERM: SIGKILL")
                self.fovea.kill()
                self.fovea.wait()
            self.stop_s = time.monotonic() - start
        else:
            self.stop_code = self.fovea.returncode
        self.children.stop_all()

    def results(self):
        a, m = self.args, self.monitor
        report = None
        try:
            with open(self.paths["report"]) as f:
                report = json.load(f)
        except (OSError, ValueError) as error:
            report_error = str(error)
        criteria = []

        def criterion(name, passed, figures):
            criteria.append({"criterion": name, "pass": bool(passed), "figures": figures})

        # Alive.
        criterion("alive: no early exit, every API call answered, exit 130",
                  m.exited_early is None and not m.unanswered and self.stop_code == 130,
                  {"exited_early": m.exited_early, "unanswered": len(m.unanswered), "polls": m.polls,
                   "slowest_answer_s": round(m.slowest_answer_s, 3), "exit_code": self.stop_code,
                   "stop_s": round(getattr(self, "stop_s", -1), 2), "failed_adds": len(self.adds_failed)})

        # Resumes after a server restart (and, for information, re-adds).
        def timing(kind):
            items = [d for d in m.done if d["kind"] == kind] + [p for p in m.pending if p["kind"] == kind]
            seconds = [d["seconds"] for d in items if d.get("seconds") is not None]
            return items, seconds, len(items) - len(seconds)

        items, seconds, missing = timing("resume")
        criterion(f"resume: every source running again within {a.resume_limit_s} s of its server",
                  items and not missing and max(seconds) <= a.resume_limit_s,
                  {"restarts": len(items), "missing": missing,
                   "max_s": round(max(seconds), 2) if seconds else None,
                   "p95_s": round(percentile(seconds, 0.95), 2) if seconds else None,
                   "median_s": round(statistics.median(seconds), 2) if seconds else None,
                   "over_limit": sum(s > a.resume_limit_s for s in seconds)})
        readds, readd_s, readd_missing = timing("re-add")
        self.readd = {"re_adds": len(readds), "missing": readd_missing,
                      "max_s": round(max(readd_s), 2) if readd_s else None,
                      "median_s": round(statistics.median(readd_s), 2) if readd_s else None}

        # Memory.
        warm_t = a.warmup_minutes * 60

        def memory(name, samples, unit):
            warm = [v for t, v in samples if warm_t <= t < warm_t + a.memory_window_s]
            end_t = samples[-1][0] if samples else 0
            end = [v for t, v in samples if t > end_t - a.memory_window_s and t >= warm_t]
            if not warm or not end:
                criterion(name, False, {"samples": len(samples), "note": "no samples after warm-up"})
                return
            w, e = statistics.median(warm), statistics.median(end)
            change = (e - w) / w
            slope = slope_per_hour([(t, v) for t, v in samples if t >= warm_t])
            criterion(name, abs(change) <= a.memory_tolerance,
                      {f"after_warmup_{unit}": w, f"end_{unit}": e, "change_pct": round(100 * change, 2),
                       f"slope_{unit}_per_h": round(slope, 1) if slope is not None else None,
                       "min": min(v for _, v in samples), "max": max(v for _, v in samples),
                       "samples": len(samples)})

        memory(f"rss: end within {100 * a.memory_tolerance:g}% of after warm-up", m.rss, "kib")
        if m.gpu:
            memory(f"gpu memory: end within {100 * a.memory_tolerance:g}% of after warm-up", m.gpu, "mib")

        # Frames.
        if report:
            # One entry per slot: a source removed and added again may appear twice.
            per_source = [{k: s.get(k) for k in ("name", "decoded", "frames", "dropped", "reconnects", "state")}
                          for s in report.get("sources", [])]
            listed = {s["id"]: s for s in (self.final_sources or {}).get("sources", [])}
            for s in per_source:
                s["in_flight"] = s["decoded"] - s["frames"] - s["dropped"]
            # The listed source is the slot of its name that batched the fewest frames past its count.
            for name, api in listed.items():
                slots = [s for s in per_source if s["name"] == name and s["frames"] >= api["frames"]]
                if slots:
                    s = min(slots, key=lambda s: s["frames"] - api["frames"])
                    s["api_frames_before_stop"], s["api_dropped_before_stop"] = api["frames"], api["dropped"]
            diffs = [s["in_flight"] for s in per_source]
            bad = {f"{s['name']} ({s['state']})": s["in_flight"] for s in per_source
                   if not 0 <= s["in_flight"] <= a.inflight_bound}
            criterion(f"frames: decoded == batched + dropped (+ at most {a.inflight_bound} in flight) per source",
                      diffs and not bad,
                      {"sources": len(diffs), "outside_bound": bad,
                       "max_in_flight_at_stop": max(diffs) if diffs else None,
                       "max_in_flight_live": max(m.inflight_max.values()) if m.inflight_max else None,
                       "decoded": sum(s["decoded"] for s in per_source),
                       "batched": sum(s["frames"] for s in per_source),
                       "dropped": sum(s["dropped"] for s in per_source)})
            self.per_source = per_source
        else:
            criterion("frames: decoded == batched + dropped", False, {"note": f"no report: {report_error}"})
            self.per_source = []

        # MQTT.
        records = self.metadata_records()
        if self.broker:
            brokers = (report or {}).get("brokers", [])
            if not brokers:
                criterion("mqtt: published == delivered + dropped + rejected + queued", False,
                          {"note": "the report has no brokers section (sinks.mqtt not in this build?)",
                           "metadata_records": records})
            else:
                b = brokers[0]
                accounted = b["delivered"] + b["dropped"] + b["rejected"] + b["queued"]
                criterion("mqtt: published == delivered + dropped + rejected + queued == metadata records",
                          b["published"] == accounted and (records is None or records == b["published"]),
                          {k: b[k] for k in ("published", "delivered", "dropped", "rejected", "queued",
                                             "reconnects")} | {"metadata_records": records})
        load = os.getloadavg()
        return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": socket.gethostname(), "cpus": os.cpu_count(), "loadavg_at_end": [round(x, 2) for x in load],
                "commit": self.commit(), "fovea_version": self.version(), "command": " ".join(sys.argv),
                "settings": {k: v for k, v in vars(a).items()},
                "pass": all(c["pass"] for c in criteria), "criteria": criteria,
                "re_adds": self.readd, "per_source": self.per_source, "resumes": m.done + m.pending,
                "unanswered": m.unanswered, "failed_adds": self.adds_failed, "events": m.events,
                "rss_kib": m.rss, "gpu_mib": m.gpu, "workdir": self.workdir,
                "report_total": (report or {}).get("total"), "report_elapsed_s": (report or {}).get("elapsed_s")}

    def metadata_records(self):
        try:
            with open(self.paths["metadata"], "rb") as f:
                return sum(1 for _ in f)
        except OSError:
            return None

    def version(self):
        run = subprocess.run([self.args.fovea, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return run.stdout.decode(errors="replace").strip()

    @staticmethod
    def commit():
        try:
            return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL).stdout.decode().strip()
        except OSError:
            return ""


def print_table(results):
    rows = [(("PASS" if c["pass"] else "FAIL"), c["criterion"],
             ", ".join(f"{k} {v}" for k, v in c["figures"].items())) for c in results["criteria"]]
    width = max(len(r[1]) for r in rows)
    print()
    for verdict, name, figures in rows:
        print(f"{verdict}  {name.ljust(width)}  {figures}")
    print(f"re-adds (information): {results['re_adds']}")
    print(f"overall: {'PASS' if results['pass'] else 'FAIL'}")


def main(argv):
    args = parse_args(argv)
    soak = Soak(args)

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    try:
        results = soak.run()
    except KeyboardInterrupt:
        log("interrupted: stopping every child")
        return 2
    finally:
        if soak.monitor:
            soak.monitor.stopping.set()
        soak.children.stop_all()
    print_table(results)
    if not args.workdir and not args.keep and results["pass"]:
        shutil.rmtree(soak.workdir, ignore_errors=True)  # a failed run keeps its logs and outputs
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
        log(f"results: {args.out}")
    return 0 if results["pass"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
