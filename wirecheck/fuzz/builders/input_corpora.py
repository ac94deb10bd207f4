"""Write the seed corpora of the targets over the kit's user inputs (fuzz/harnesses/inputs.py):
``python -m wirecheck.fuzz.builders.input_corpora``.

Real files and broken ones, as users hand them over: profile files (the docs' example, one
per protocol and built-in profile, and the mistakes a hand-written one has: not UTF-8, cut
short, ``extends`` not a name, settings of the wrong type); the three kinds of file
``wirecheck report`` reads, made by the kit itself here (a suite's result file of a few tests,
a fuzz campaign summary, a capture analysis summary when Spark is installed) and each cut
short, emptied of a block, or retyped; a network fuzzer finding's metadata as the fuzzer
writes it, and spoiled; client drivers' output as the shipped drivers and the runtimes'
uncaught errors print it. The runs make the report seeds differ from one build to the next
(times, ports); everything else is deterministic.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from wirecheck.fuzz.builders.corpus_files import CORPORA, write_corpus

ROOT = Path(__file__).resolve().parents[3]
#: Bytes of a report seed kept (a larger real file is cut here, still valid JSON only by chance).
MAX_REPORT_SEED = 64 * 1024


def _spoiled(name: str, text: str) -> dict[str, bytes]:
    """``text`` and the usual ways a file of it goes wrong."""
    data = text.encode()
    return {f"{name}": data, f"{name}-cut": data[:len(data) // 2], f"{name}-empty": b"",
            f"{name}-latin1": data.replace(b"e", b"\xe9", 3), f"{name}-nul": data[:40] + b"\x00" + data[40:]}


def profile_seeds() -> dict[str, bytes]:
    from wirecheck.reference_impl.core import registry
    seeds = _spoiled("docs-example", 'extends = "document"\n[credentials]\napi_key = "my-key"\n[timing]\n'
                     'retry_backoff = 0.1\nmax_retries = 3\n[waivers]\n"BLIP-PUB-009" = "we echo the tag"\n')
    for spec in registry.all_protocols():
        for name in sorted(spec.profiles):
            seeds[f"{spec.id}-{name}"] = f'extends = "{name}"\nname = "mine"\n'.encode()
    seeds.update({
        "extends-list": b"extends = [1]\n", "extends-number": b"extends = 3\n", "extends-unknown": b'extends = "x"\n',
        "timing-string": b'[timing]\nretry_backoff = "fast"\n', "timing-table": b"timing = 3\n",
        "features-number": b"[features]\ncommands = 1\n", "waivers-number": b'[waivers]\n"X-1" = 2\n',
        "unknown-section": b"[nothing]\na = 1\n", "deep": b"a.b.c.d.e.f = 1\n" + b"[x]\n" * 3,
        "unclosed-table": b'extends = "current"\n[timing\nx = 1\n',
    })
    return seeds


def _run(*args: str, cwd: str) -> None:
    subprocess.run([sys.executable, "-m", "wirecheck", *args], cwd=cwd, check=False, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def report_seeds() -> dict[str, bytes]:
    seeds: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="wirecheck-corpus-") as tmp:
        _run("check", "--protocol", "blipmq", "--label", "seed", "--report", f"{tmp}/result.json", "--",
             "-k", "test_ping_after_auth_gets_pong or unknown_type", cwd=tmp)
        _run("fuzz", "--all", "--protocol", "blipmq", "--time", "4", "--jobs", "1", "--no-live",
             "--out", f"{tmp}/campaign.json", "--findings", f"{tmp}/f", "--no-progress", cwd=tmp)
        _run("analyze", str(ROOT / "captures" / "blipmq" / "client.pcap.gz"), "--out", f"{tmp}/analysis",
             "--master", "local[1]", cwd=tmp)
        for name, path in (("result", "result.json"), ("campaign", "campaign.json"),
                           ("analysis", "analysis/summary.json")):
            try:
                text = Path(tmp, path).read_text()[:MAX_REPORT_SEED]
            except OSError:                 # e.g. no Spark here: that kind is left out
                continue
            seeds.update(_spoiled(name, text))
            doc = json.loads(text) if len(text) < MAX_REPORT_SEED else None
            if isinstance(doc, dict):
                for key in list(doc)[:8]:    # each block missing, or of another type
                    seeds[f"{name}-no-{key}"] = json.dumps({k: v for k, v in doc.items() if k != key}).encode()
                    seeds[f"{name}-{key}-as-list"] = json.dumps({**doc, key: [doc[key]]}).encode()
    seeds.update({"not-an-object": b"[1, 2]", "kind-number": b'{"kind": 7}',
                  "stopped-analysis": b'{"kind": "capture-analysis", "interrupted": {"signal": "SIGTERM"}}'})
    return seeds


def finding_seeds() -> dict[str, bytes]:
    from wirecheck.reference_impl.blipmq import codec as blip
    hello, ping = blip.encode(blip.Hello(1)).hex(), blip.encode(blip.Ping(3)).hex()
    meta = {"protocol": "blipmq", "profile": None, "kind": "crash", "signature": "crash: killed by SIGABRT",
            "reason": "Fatal: frame length underflow in PING (killed by SIGABRT)", "target": "127.0.0.1:5555",
            "mutation": "length at 0", "changed_frame": 2, "frames": [ping], "writes": [4, len(ping) // 2 - 4],
            "connections_before": [{"frames": [hello, ping], "writes": [len(hello + ping) // 2],
                                    "mutation": "none"}],
            "replayed": True, "reproduced": 3, "replays": 3, "replay_results": ["crash: x"] * 3}
    seeds = _spoiled("crash", json.dumps(meta, indent=1))
    seeds.update({
        "protocol-list": json.dumps({**meta, "protocol": ["blipmq"]}).encode(),
        "protocol-unknown": json.dumps({**meta, "protocol": "mqtt"}).encode(),
        "writes-bool": json.dumps({**meta, "writes": [True, 8]}).encode(),
        "writes-too-many": json.dumps({**meta, "writes": [9, 9]}).encode(),
        "before-string": json.dumps({**meta, "connections_before": "00"}).encode(),
        "before-odd-hex": json.dumps({**meta, "connections_before": [{"frames": ["0"]}]}).encode(),
        "before-list": json.dumps({**meta, "connections_before": [["00"]]}).encode(),
        "before-writes-zero": json.dumps({**meta, "connections_before": [{"frames": ["00"], "writes": [0, 1]}]}).encode(),
    })
    return seeds


def driver_output_seeds() -> dict[str, bytes]:
    return {
        "clean": b"received m-1\nreceived m-2\nreceived m-3\n",
        "error": b"received m-1\nerror NACK 500: durable publish failed\n",
        "hung": b"hung publish did not return within 20 s\n",
        "python-traceback": b"received a\nTraceback (most recent call last):\n  File \"d.py\", line 3, in <module>\n"
                            b"    main()\nConnectionResetError: [Errno 104] Connection reset by peer\n",
        "node-uncaught": b"Error: Unknown response 22\n    at Client.onData (client.js:120:11)\n\nNode.js v20.11.0\n",
        "rust-panic": b"thread 'main' panicked at src/main.rs:10:5:\ncalled `Result::unwrap()`\n",
        "java": b"Exception in thread \"main\" java.io.IOException: closed\n\tat X.main(X.java:3)\n",
        "no-newline": b"received m-1\nerror", "crlf": b"received m-1\r\nerror oops\r\n",
        "binary": bytes(range(256)), "empty": b"", "long-line": b"received " + b"x" * 5000 + b"\n",
        "words-only": b"error\nhung\nreceived\n",
    }


def main() -> None:
    for folder, seeds in (("input-profile", profile_seeds()), ("input-report", report_seeds()),
                          ("input-finding", finding_seeds()), ("input-driver-output", driver_output_seeds())):
        write_corpus(CORPORA / folder, seeds)
        print(f"{folder}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
