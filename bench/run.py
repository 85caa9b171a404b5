"""``make bench``: scrapespy against its ceiling (a plain persistent Scrapy crawler) and its peer
(ScrapyRT) on one local site, in one run; figures as ratios; bench/results/latest.json.

Every load is bounded in time (``BENCH_DURATION`` seconds a run, default 5; js runs at least 10)
and targets only 127.0.0.1. The static contenders take ``BENCH_REPS`` turns each (default 3) at
every concurrency, one after the other, and each figure is the median of a contender's turns.
At concurrency 1, where the target is a latency, they take ``BENCH_LATENCY_REPS`` shorter turns
(default 7 of 3 s). A ratio against the ceiling or the peer is the median of the ratios of the
turns taken in the same round, so that the machine's drift between rounds cancels out.

Issue 20's content figures come first (bench/content_bench.py: main-content quality on the
corpus and cost against trafilatura, in this process before anything else starts), then ride on
the service's runs (bench/formats.py: markdown at static c=32, the screenshot at js c=1), as
does issue 22's (bench/escalation.py: auto at static c=1, when its first attempt succeeds).
Issue 23's jobs figures come last (bench/jobs.py, ``BENCH_JOBS=0`` leaves them out).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import content_bench, escalation, formats, jobs
from bench.contenders import (
    RT_VENV,
    ScrapyRT,
    ceiling,
    postgres_database,
    scrapespy,
)
from bench.site import serve, server_name, tear_down
from harness.pages import write_pages
from harness.procinfo import count_named, cpu_seconds, rss_mb

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
DURATION = float(os.environ.get("BENCH_DURATION", "5"))
REPS = int(os.environ.get("BENCH_REPS", "3"))
LATENCY_REPS = int(os.environ.get("BENCH_LATENCY_REPS", "7"))
LATENCY_DURATION = float(os.environ.get("BENCH_LATENCY_DURATION", "3"))
JS_DURATION = max(DURATION, 10.0)
STATIC_CONCURRENCY = (1, 8, 32)
JS_CONCURRENCY = (1, 4)


def wrk(script: str, base: str, concurrency: int, env: dict[str, str], duration: float) -> dict:
    threads = min(concurrency, 2)
    done = subprocess.run(
        [
            "wrk",
            "-t",
            str(threads),
            "-c",
            str(concurrency),
            "-d",
            # wrk reads whole seconds only: "8.5s" is a usage error
            f"{math.ceil(duration)}s",
            "--timeout",
            "60s",
            "-s",
            str(BENCH / "wrk" / script),
            base,
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=duration + 120,
    )
    line = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if not line:
        raise RuntimeError(f"wrk failed: {done.stdout}\n{done.stderr}")
    return json.loads(line[-1])


def measured(
    pid: int,
    script: str,
    base: str,
    concurrency: int,
    env: dict[str, str],
    duration: float = DURATION,
) -> dict[str, Any]:
    cpu0 = cpu_seconds(pid)
    out = wrk(script, base, concurrency, env, duration)
    cpu = cpu_seconds(pid) - cpu0
    n = max(out["requests"], 1)
    return {
        "requests": out["requests"],
        "failed": out["failed"] + out["socket_errors"],
        "rps": out["requests"] / (out["duration_us"] / 1e6),
        "p50_ms": out["p50_us"] / 1000,
        "p99_ms": out["p99_us"] / 1000,
        "cpu_s_per_1000": cpu / n * 1000,
        "peak_rss_mb": rss_mb(pid, peak=True, children="python"),
    }


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the turns, and every turn's throughput and p50 besides."""
    out: dict[str, Any] = {}
    for name in runs[0]:
        values = [run[name] for run in runs if isinstance(run.get(name), (int, float))]
        out[name] = statistics.median(values) if values else runs[0][name]
    out["rps_turns"] = [round(run["rps"], 1) for run in runs]
    out["p50_ms_turns"] = [round(run["p50_ms"], 2) for run in runs]
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def paired_ratios(turns: dict[str, list[dict[str, Any]]], against: str) -> dict[str, Any]:
    """Each contender's throughput and p50 against ``against``, turn by turn within a round:
    the median of those ratios, and the ratios themselves."""
    out: dict[str, Any] = {}
    for name, runs in turns.items():
        for figure in ("rps", "p50_ms"):
            each = [
                r
                for run, base in zip(runs, turns.get(against, []), strict=False)
                if (r := ratio(run[figure], base[figure])) is not None
            ]
            key = f"{figure.removesuffix('_ms')}_x_{against}"
            out.setdefault(name, {})[key] = statistics.median(each) if each else None
            out[name][f"{key}_turns"] = each
    return out


def main() -> int:
    RESULTS.mkdir(exist_ok=True)
    # in this process, before anything else runs on the cores
    print(
        "content: only_main_content on bench/content/corpus, cost against trafilatura", flush=True
    )
    content = content_bench.run()
    print("\n".join(content_bench.report(content)), flush=True)
    work = Path(tempfile.mkdtemp(prefix="scrapespy-bench-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    urls_file = work / "urls.txt"
    urls_file.write_text("\n".join(f"{target}/article-{i}.html" for i in range(20)))
    results: dict[str, Any] = {
        "duration_s": DURATION,
        "turns": REPS,
        "static": {},
        "js": {},
        "memory": {},
        "workers": {},
        "machine": {"cores": os.cpu_count()},
        "site": server_name(),
        "content": content,
    }
    cleanups: list[Any] = []
    try:
        print(
            f"bench: {REPS} x {DURATION:g} s a run, target {target} ({server_name()})", flush=True
        )
        rt = ScrapyRT(work / "rtlogs").start() if (RT_VENV / "bin" / "scrapyrt").exists() else None
        if rt is not None:
            cleanups.append(rt.stop)
            wrk("scrapyrt.lua", rt.base, 8, {"BENCH_TARGET": target}, 2)  # warm-up

        backends = {"sqlite": f"sqlite:///{work / 'bench.db'}"}
        pg = postgres_database()
        if pg is not None:
            backends["postgresql"] = pg[0]
            cleanups.append(pg[1])
        services: dict[str, tuple[Any, dict[str, str]]] = {}
        for backend, url in backends.items():
            (work / backend).mkdir()
            proc, key = scrapespy(url, work / backend)
            cleanups.append(proc.stop)
            env = {"BENCH_TARGET": target, "BENCH_KEY": key}
            wrk("scrapespy.lua", proc.base, 8, env, 2)  # warm-up: robots.txt, connections
            services[backend] = (proc, env)
        if formats.MARKDOWN:
            proc, env = services["sqlite"]
            wrk(formats.SCRIPT, proc.base, 8, formats.markdown_env(env), 2)

        # The machine's speed drifts by tens of percent from one minute to the next (a shared
        # VM), so the contenders take turns, REPS times at each concurrency, and each figure is
        # the median of its turns.
        def contenders(c: int, seconds: float) -> list[tuple[str, Any]]:
            out: list[tuple[str, Any]] = [("ceiling", lambda: ceiling(urls_file, c, seconds))]
            if rt is not None:
                rt_env = {"BENCH_TARGET": target}
                out.append(
                    (
                        "scrapyrt",
                        lambda: measured(rt.proc.pid, "scrapyrt.lua", rt.base, c, rt_env, seconds),
                    )
                )
            for backend, (proc, env) in services.items():
                out.append(
                    (
                        f"scrapespy_{backend}",
                        lambda proc=proc, env=env: measured(
                            proc.process.pid, "scrapespy.lua", proc.base, c, env, seconds
                        ),
                    )
                )
            if c == 32 and formats.MARKDOWN:
                proc, env = services["sqlite"]
                md_env = formats.markdown_env(env)
                out.append(
                    (
                        formats.CONTENDER,
                        lambda: measured(
                            proc.process.pid, formats.SCRIPT, proc.base, c, md_env, seconds
                        ),
                    )
                )
            return out

        for c in STATIC_CONCURRENCY:
            turns: dict[str, list[dict[str, Any]]] = {}
            reps, seconds = (LATENCY_REPS, LATENCY_DURATION) if c == 1 else (REPS, DURATION)
            for rep in range(reps):
                # each round starts with the next contender, so that none is always first: in
                # alternating A/B runs a variant's place in the round moved its c=1 figure by
                # up to 0.1x the ceiling
                order = contenders(c, seconds)
                for name, run in order[rep % len(order) :] + order[: rep % len(order)]:
                    figures = run()
                    turns.setdefault(name, []).append(figures)
                    print(f"  {name:<22} c={c:<3} turn {rep + 1}: {figures}", flush=True)
            paired = [paired_ratios(turns, "ceiling"), paired_ratios(turns, "scrapyrt")]
            for name, runs in turns.items():
                figures = median_of(runs)
                for ratios in paired:
                    figures.update(ratios.get(name, {}))
                results["static"].setdefault(name, {})[c] = figures
            if c == 32 and formats.MARKDOWN:
                content["markdown_c32"] = formats.markdown_ratio(turns, "scrapespy_sqlite")

        proc, env = services["sqlite"]
        if escalation.AUTO:
            content["auto_static_c1"] = escalation.added_p50(
                lambda script, e, c, seconds: measured(
                    proc.process.pid, script, proc.base, c, e, seconds
                ),
                env,
            )
        # js on the same instance
        jenv = {**env, "BENCH_ENGINE": "js", "BENCH_PAGE": "/js.html"}
        wrk("scrapespy.lua", proc.base, 1, jenv, 3)  # browser launch
        for c in JS_CONCURRENCY:
            figures = measured(proc.process.pid, "scrapespy.lua", proc.base, c, jenv, JS_DURATION)
            figures["browser_processes"] = count_named(proc.process.pid, "chrom")
            results["js"].setdefault("scrapespy", {})[c] = figures
            print(f"  scrapespy js c={c:<3} {figures}", flush=True)

        def js_measure(script, e, c, seconds):  # type: ignore[no-untyped-def]
            return measured(proc.process.pid, script, proc.base, c, e, seconds)

        if formats.SCREENSHOT:
            content["screenshot_js_c1"] = formats.screenshot_added_p50(js_measure, env)
        if formats.ACTIONS:
            content["actions_js_c1"] = formats.actions_added_p50(js_measure, env)
        for proc, _ in services.values():
            proc.stop()

        if rt is not None:
            jenv = {"BENCH_TARGET": target, "BENCH_ENGINE": "js", "BENCH_PAGE": "/js.html"}
            for c in JS_CONCURRENCY:
                figures = measured(rt.proc.pid, "scrapyrt.lua", rt.base, c, jenv, JS_DURATION)
                results["js"].setdefault("scrapyrt", {})[c] = figures
                print(f"  scrapyrt js c={c:<3} {figures}", flush=True)
            rt.stop()

        # memory: RSS after the first 1,000 requests and after 10,000 on a fresh instance
        (work / "memory").mkdir()
        proc, key = scrapespy(backends["sqlite"].replace("bench.db", "memory.db"), work / "memory")
        cleanups.append(proc.stop)
        env = {"BENCH_TARGET": target, "BENCH_KEY": key}
        # wrk stops each of its 2 threads at BENCH_MAX responses but idles until -d is over:
        # size -d from the rate measured above instead of a fixed, generous bound
        rate = max(results["static"]["scrapespy_sqlite"][8]["rps"], 20.0)
        first = wrk(
            "scrapespy.lua", proc.base, 8, {**env, "BENCH_MAX": "500"}, 1000 / rate * 1.5 + 3
        )
        after_1k = rss_mb(proc.process.pid, children="python")
        rest = wrk(
            "scrapespy.lua", proc.base, 8, {**env, "BENCH_MAX": "4500"}, 9000 / rate * 1.5 + 3
        )
        after_10k = rss_mb(proc.process.pid, children="python")
        results["memory"] = {
            "requests": [first["requests"], first["requests"] + rest["requests"]],
            "rss_mb_after_1000": after_1k,
            "rss_mb_after_10000": after_10k,
            "growth": round(after_10k / after_1k - 1, 3),
        }
        print(f"  memory    {results['memory']}", flush=True)
        proc.stop()

        # workers: 1 and 2 processes on one socket, c=32
        for n in (1, 2):
            (work / f"w{n}").mkdir()
            proc, key = scrapespy(
                backends["sqlite"].replace("bench.db", f"w{n}.db"),
                work / f"w{n}",
                args=("--workers", str(n)),
            )
            cleanups.append(proc.stop)
            env = {"BENCH_TARGET": target, "BENCH_KEY": key}
            time.sleep(2 if n > 1 else 0)
            wrk("scrapespy.lua", proc.base, 8, env, 2)
            figures = measured(proc.process.pid, "scrapespy.lua", proc.base, 32, env)
            results["workers"][n] = figures
            print(f"  workers={n} c=32 {figures}", flush=True)
            proc.stop()
    finally:
        tear_down(cleanups, site, work)

    report(results)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2, default=str))
    print(f"\nwritten: {RESULTS / 'latest.json'}")
    if jobs.ENABLED:  # issue 23's figures, on instances and a site of their own
        jobs.main()
    return 0


def report(results: dict[str, Any]) -> None:
    static = results["static"]
    print(
        "\nstatic                c   rps     p50 ms  p99 ms  cpu s/1k  rss MB"
        "   rps x ceiling/scrapyrt   p50 x ceiling/scrapyrt"
    )
    for name in (
        "ceiling",
        "scrapyrt",
        "scrapespy_sqlite",
        "scrapespy_postgresql",
        formats.CONTENDER,
    ):
        for c, f in static.get(name, {}).items():
            print(
                f"{name:<22}{c:>3} {f['rps']:7.1f} {f['p50_ms']:7.1f} {f['p99_ms']:7.1f} "
                f"{f['cpu_s_per_1000']:8.2f} {f['peak_rss_mb']:7.1f}"
                f"   {f.get('rps_x_ceiling')!s:>8} {f.get('rps_x_scrapyrt')!s:>8}"
                f"        {f.get('p50_x_ceiling')!s:>8} {f.get('p50_x_scrapyrt')!s:>8}"
            )
    js = results["js"]
    print("\njs            c   rps     p50 ms  p99 ms  cpu s/1k  p50 x scrapyrt")
    for name in ("scrapespy", "scrapyrt"):
        for c, f in js.get(name, {}).items():
            peer = js.get("scrapyrt", {}).get(c, {})
            f["p50_x_scrapyrt"] = ratio(f["p50_ms"], peer.get("p50_ms"))
            print(
                f"{name:<12}{c:>3} {f['rps']:7.2f} {f['p50_ms']:7.0f} {f['p99_ms']:7.0f} "
                f"{f['cpu_s_per_1000']:8.1f}  {f['p50_x_scrapyrt']!s:>8}"
            )
    print(f"\nmemory: {results['memory']}")
    w = results["workers"]
    if 1 in w and 2 in w:
        print(
            f"workers: 1 -> {w[1]['rps']:.1f} rps, 2 -> {w[2]['rps']:.1f} rps "
            f"(x{ratio(w[2]['rps'], w[1]['rps'])})"
        )
    print("\n" + "\n".join(content_bench.report(results["content"])))
    print("\n".join(formats.report(results["content"])))
    print("\n".join(escalation.report(results["content"])))


if __name__ == "__main__":
    raise SystemExit(main())
